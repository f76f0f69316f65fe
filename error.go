package leasegate

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Code is a stable error code: the slug that ends a problem's type URI
// (ProblemBase + code) and that clients switch on.
type Code string

// The error codes of the contract (docs/api.md lists them).
const (
	CodeValidation       Code = "validation"
	CodeMalformed        Code = "malformed-request"
	CodeNotFound         Code = "not-found"
	CodeForbidden        Code = "forbidden"
	CodeUnauthorized     Code = "unauthorized"
	CodePayloadTooLarge  Code = "payload-too-large"
	CodeUnsupportedMedia Code = "unsupported-media-type"
	CodeRateLimited      Code = "rate-limited"
	CodeAbnormalUsage    Code = "abnormal-usage-detected"
	CodeUnavailable      Code = "unavailable"
	CodeInternal         Code = "internal"
	CodeLimitMismatch    Code = "limit-mismatch"
	CodeClaimInProgress  Code = "claim-in-progress"
	// CodeRequestTimeout is only ever logged: the client went away before
	// the answer (status 499, as nginx logs it).
	CodeRequestTimeout Code = "request-timeout"
)

// ProblemBase is the prefix of every problem type URI.
const ProblemBase = "https://leasegate.dev/problems/"

// StatusClientClosedRequest is nginx's 499: the client closed the
// connection before the answer. It only shows in logs and metrics.
const StatusClientClosedRequest = 499

// codeStatus is the one table from error code to HTTP status. The
// gateway's error handler and the Go client both read it; a test checks
// the OpenAPI file against it.
var codeStatus = map[Code]int{
	CodeValidation:       http.StatusUnprocessableEntity,
	CodeMalformed:        http.StatusBadRequest,
	CodeNotFound:         http.StatusNotFound,
	CodeForbidden:        http.StatusForbidden,
	CodeUnauthorized:     http.StatusUnauthorized,
	CodePayloadTooLarge:  http.StatusRequestEntityTooLarge,
	CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
	CodeRateLimited:      http.StatusTooManyRequests,
	CodeAbnormalUsage:    http.StatusTooManyRequests,
	CodeUnavailable:      http.StatusServiceUnavailable,
	CodeInternal:         http.StatusInternalServerError,
	CodeLimitMismatch:    http.StatusConflict,
	CodeClaimInProgress:  http.StatusConflict,
	CodeRequestTimeout:   StatusClientClosedRequest,
}

// Codes returns every error code, in no particular order.
func Codes() []Code {
	out := make([]Code, 0, len(codeStatus))
	for c := range codeStatus {
		out = append(out, c)
	}
	return out
}

// Status is the HTTP status that carries code. Two statuses are answered
// with another code than this table gives: 405 and 431 (net/http's
// oversized headers), documented in docs/api.md. An unknown code is 500.
func (c Code) Status() int {
	if s, ok := codeStatus[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Known reports whether c is in the table.
func (c Code) Known() bool {
	_, ok := codeStatus[c]
	return ok
}

// Type is the problem type URI of code.
func (c Code) Type() string { return ProblemBase + string(c) }

// CodeOfType returns the code of a problem type URI, if it is one of ours.
func CodeOfType(typeURI string) (Code, bool) {
	if len(typeURI) <= len(ProblemBase) || typeURI[:len(ProblemBase)] != ProblemBase {
		return "", false
	}
	c := Code(typeURI[len(ProblemBase):])
	return c, c.Known()
}

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a domain error: a code from the table, a message a client may
// read, and for validation errors the fields at fault. Adapters' sentinel
// errors are *Error values (check them with errors.Is), and any error that
// wraps an *Error answers with its code.
type Error struct {
	Code Code
	// Message is what the client is told (a problem's detail).
	Message string
	// Fields lists invalid inputs (CodeValidation).
	Fields []FieldError
	// RetryAfter, when positive, tells the client when to try again.
	RetryAfter time.Duration
	// Op, when set, prefixes Error() (e.g. "redislock"), so logs say where
	// the error came from.
	Op string
	// Status, when set, is the HTTP status to answer instead of the
	// code's (405 and 431, which have no code of their own).
	Status int
}

// HTTPStatus is the status that carries e.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Code.Status()
}

// Problem is the RFC 9457 problem document of e, as the gateway sends it
// and the client reads it.
func (e *Error) Problem() Problem {
	status := e.HTTPStatus()
	title := http.StatusText(status)
	if status == StatusClientClosedRequest {
		title = "Client Closed Request"
	}
	return Problem{Type: e.Code.Type(), Title: title, Status: status, Detail: e.Message, Errors: e.Fields}
}

// Problem is an RFC 9457 problem details document
// (application/problem+json).
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors,omitempty"`
}

// ProblemContentType is the media type of a Problem.
const ProblemContentType = "application/problem+json"

func (e *Error) Error() string {
	if e.Op != "" {
		return e.Op + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

// Errorf builds an *Error with code and a message.
func Errorf(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Invalid is a validation error listing the bad fields.
func Invalid(fields ...FieldError) *Error {
	e := &Error{Code: CodeValidation, Message: "the request has invalid fields", Fields: fields}
	if len(fields) == 1 {
		e.Message = fields[0].Field + ": " + fields[0].Message
	}
	return e
}

// DefaultRetryAfter is what an unavailable answer tells a client to wait.
const DefaultRetryAfter = time.Second

// UnavailableMessage is the message of every store outage: the caller
// learns that nothing changed.
const UnavailableMessage = "the lock store is unavailable; nothing was changed, retry later"

// ErrorOf returns the *Error a client is told for err, and whether err is
// unexpected (to be logged: outages and internal errors). A *BannedError
// becomes abnormal-usage-detected with its remaining time; a deadline
// becomes unavailable; anything without a code is internal, with a
// generic message so that nothing internal leaks.
func ErrorOf(err error) (*Error, bool) {
	var be *BannedError
	if errors.As(err, &be) {
		return &Error{
			Code:       CodeAbnormalUsage,
			Message:    "this user is banned for abnormal usage until " + FormatTime(be.Until),
			RetryAfter: max(be.Remaining, time.Second),
		}, false
	}
	var e *Error
	if errors.As(err, &e) {
		// A full waiting queue is this gateway's capacity answering, not
		// a failure: not logged as one (it is counted, and answered 503).
		// Nor is a call refused because the store is known down: the
		// outage was logged once when it began.
		failure := e.Code == CodeUnavailable && !errors.Is(err, ErrTooManyWaiters) && !errors.Is(err, ErrStoreDown)
		return e, failure || e.Code == CodeInternal
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: CodeUnavailable, Message: UnavailableMessage, RetryAfter: DefaultRetryAfter}, true
	}
	return &Error{Code: CodeInternal, Message: "internal error"}, true
}

// ErrorCode returns the code of err (CodeInternal for an error without one).
func ErrorCode(err error) Code {
	e, _ := ErrorOf(err)
	return e.Code
}
