package leasegate

import (
	"context"
	"errors"
	"time"
)

// Code is a stable error code: the slug that ends a problem's type URI
// and that clients switch on. The HTTP side (package api) maps each code
// to a status and a problem type.
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

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a domain error: a code, a message a client may
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
}

func (e *Error) Error() string {
	if e.Op != "" {
		return e.Op + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

// NewError builds an *Error with code and a message.
func NewError(code Code, message string) *Error {
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
		// outage was logged once when it began. Nor a wait ended by the
		// gateway's shutdown.
		failure := e.Code == CodeUnavailable && !errors.Is(err, ErrTooManyWaiters) &&
			!errors.Is(err, ErrStoreDown) && !errors.Is(err, ErrShuttingDown)
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

// Detailed returns an error that is errors.Is sentinel and whose *Error
// (errors.As, ErrorOf) is a copy of sentinel with message and retryAfter:
// a 409 that names the limit in force, say, while callers still match
// the package sentinel.
func Detailed(sentinel *Error, message string, retryAfter time.Duration) error {
	e := *sentinel
	e.Message = message
	e.RetryAfter = retryAfter
	return &detailedError{e: &e, sentinel: sentinel}
}

type detailedError struct {
	e        *Error
	sentinel *Error
}

func (d *detailedError) Error() string { return d.e.Error() }

// Unwrap lists the detailed copy first, so errors.As finds it before the
// sentinel.
func (d *detailedError) Unwrap() []error { return []error{d.e, d.sentinel} }
