package api

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/leasegate/leasegate"
)

// ProblemBase is the prefix of every problem type URI.
const ProblemBase = "https://leasegate.dev/problems/"

// ProblemContentType is the media type of a Problem.
const ProblemContentType = "application/problem+json"

// StatusClientClosedRequest is nginx's 499: the client closed the
// connection before the answer. It only shows in logs and metrics.
const StatusClientClosedRequest = 499

// PrincipalKey is the request-scoped key (an echo.Context key) under which
// authentication stores the caller's leasegate.Principal for the handlers.
const PrincipalKey = "leasegate.principal"

// codeStatus is the one table from error code to HTTP status. The
// gateway's error handler and the Go client both read it; a test checks
// the OpenAPI file against it.
var codeStatus = map[leasegate.Code]int{
	leasegate.CodeValidation:       http.StatusUnprocessableEntity,
	leasegate.CodeMalformed:        http.StatusBadRequest,
	leasegate.CodeNotFound:         http.StatusNotFound,
	leasegate.CodeForbidden:        http.StatusForbidden,
	leasegate.CodeUnauthorized:     http.StatusUnauthorized,
	leasegate.CodePayloadTooLarge:  http.StatusRequestEntityTooLarge,
	leasegate.CodeUnsupportedMedia: http.StatusUnsupportedMediaType,
	leasegate.CodeRateLimited:      http.StatusTooManyRequests,
	leasegate.CodeAbnormalUsage:    http.StatusTooManyRequests,
	leasegate.CodeUnavailable:      http.StatusServiceUnavailable,
	leasegate.CodeInternal:         http.StatusInternalServerError,
	leasegate.CodeLimitMismatch:    http.StatusConflict,
	leasegate.CodeClaimInProgress:  http.StatusConflict,
	leasegate.CodeRequestTimeout:   StatusClientClosedRequest,
}

// Codes returns every error code of the contract, in no particular order.
func Codes() []leasegate.Code { return slices.Collect(maps.Keys(codeStatus)) }

// Status is the HTTP status that carries code. Two statuses are answered
// with another code than this table gives: 405 and 431 (net/http's
// oversized headers), documented in docs/api.md. An unknown code is 500.
func Status(code leasegate.Code) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Type is the problem type URI of code.
func Type(code leasegate.Code) string { return ProblemBase + string(code) }

// CodeOfType returns the code of a problem type URI, if it is one of ours.
func CodeOfType(typeURI string) (leasegate.Code, bool) {
	rest, ok := strings.CutPrefix(typeURI, ProblemBase)
	if !ok || rest == "" {
		return "", false
	}
	_, ok = codeStatus[leasegate.Code(rest)]
	return leasegate.Code(rest), ok
}

// Problem is an RFC 9457 problem details document
// (application/problem+json), as the gateway sends it and the client
// reads it.
type Problem struct {
	Type   string                 `json:"type"`
	Title  string                 `json:"title"`
	Status int                    `json:"status"`
	Detail string                 `json:"detail"`
	Errors []leasegate.FieldError `json:"errors,omitempty"`
}

// ProblemOf is the problem document of e. A status of 0 is the code's
// (Status); another one answers e with it (405, 431 and Echo's other
// 4xx, which have no code of their own).
func ProblemOf(e *leasegate.Error, status int) Problem {
	if status == 0 {
		status = Status(e.Code)
	}
	title := http.StatusText(status)
	if status == StatusClientClosedRequest {
		title = "Client Closed Request"
	}
	return Problem{Type: Type(e.Code), Title: title, Status: status, Detail: e.Message, Errors: e.Fields}
}
