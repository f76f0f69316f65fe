package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/redislock"
)

// ProblemBase is the prefix of every problem type URI; the last path
// segment is the stable slug listed in docs/api.md.
const ProblemBase = "https://leasegate.dev/problems/"

// Problem slugs (the last path segment of a problem's type).
const (
	SlugValidation        = "validation"
	SlugMalformed         = "malformed-request"
	SlugNotFound          = "not-found"
	SlugForbidden         = "forbidden"
	SlugUnauthorized      = "unauthorized"
	SlugPayloadTooLarge   = "payload-too-large"
	SlugUnsupportedMedia  = "unsupported-media-type"
	SlugRateLimited       = "rate-limited"
	SlugAbnormalUsage     = "abnormal-usage-detected"
	SlugUnavailable       = "unavailable"
	SlugInternal          = "internal"
	SlugRequestTimeout    = "request-timeout"
	problemContentType    = "application/problem+json"
	defaultRetryAfterSecs = 1
)

// FieldError names one invalid input field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem detail. Handlers return it as an error;
// the HTTP error handler writes it.
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors,omitempty"`

	// RetryAfter, when positive, is sent as the Retry-After header (seconds).
	RetryAfter int `json:"-"`
	// Headers are extra response headers (e.g. WWW-Authenticate).
	Headers map[string]string `json:"-"`
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail)
}

// NewProblem builds a problem with the given status, slug and detail.
func NewProblem(status int, slug, detail string) *Problem {
	return &Problem{
		Type:   ProblemBase + slug,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
	}
}

// Invalid is a 422 validation problem listing the bad fields.
func Invalid(errs ...FieldError) *Problem {
	p := NewProblem(http.StatusUnprocessableEntity, SlugValidation, "the request has invalid fields")
	p.Errors = errs
	if len(errs) == 1 {
		p.Detail = errs[0].Field + ": " + errs[0].Message
	}
	return p
}

// problemFor maps any error to the problem the client sees. It is the one
// table from domain errors to HTTP. The bool says whether the error is
// unexpected and must be logged.
func problemFor(err error) (*Problem, bool) {
	var p *Problem
	if errors.As(err, &p) {
		return p, false
	}
	switch {
	case errors.Is(err, redislock.ErrNotHeld):
		return NewProblem(http.StatusNotFound, SlugNotFound, "no live lock on this resource"), false
	case errors.Is(err, redislock.ErrForbidden):
		return NewProblem(http.StatusForbidden, SlugForbidden, "the lock is held by another owner or under another token"), false
	case errors.Is(err, redislock.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		p := NewProblem(http.StatusServiceUnavailable, SlugUnavailable, "the lock store is unavailable; nothing was changed, retry later")
		p.RetryAfter = defaultRetryAfterSecs
		return p, true
	}
	if p, unexpected, ok := abuseProblem(err); ok {
		return p, unexpected
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return httpErrorProblem(he), he.Code >= 500
	}
	return NewProblem(http.StatusInternalServerError, SlugInternal, "internal error"), true
}

// abuseProblem is the part of the table for package abuse.
func abuseProblem(err error) (*Problem, bool, bool) {
	var be *abuse.BannedError
	switch {
	case errors.As(err, &be):
		p := NewProblem(http.StatusTooManyRequests, SlugAbnormalUsage,
			"this user is banned for abnormal usage until "+Timestamp(be.Until))
		p.RetryAfter = int(max((be.Remaining+time.Second-1)/time.Second, 1))
		return p, false, true
	case errors.Is(err, abuse.ErrNotFound):
		return NewProblem(http.StatusNotFound, SlugNotFound, "nothing there for this user"), false, true
	case errors.Is(err, abuse.ErrAllowlisted):
		return Invalid(FieldError{Field: "user_id", Message: "is on the allowlist and cannot be banned"}), false, true
	case errors.Is(err, abuse.ErrBadCursor):
		return Invalid(FieldError{Field: "cursor", Message: "must be a next_cursor from a previous page"}), false, true
	case errors.Is(err, abuse.ErrUnavailable):
		p := NewProblem(http.StatusServiceUnavailable, SlugUnavailable, "the lock store is unavailable; nothing was changed, retry later")
		p.RetryAfter = defaultRetryAfterSecs
		return p, true, true
	}
	return nil, false, false
}

func httpErrorProblem(he *echo.HTTPError) *Problem {
	switch he.Code {
	case http.StatusNotFound:
		return NewProblem(he.Code, SlugNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		// The contract's slug list has no 405 of its own: a wrong method is
		// a malformed request for this route (docs/api.md).
		return NewProblem(he.Code, SlugMalformed, "method not allowed on this route; see the Allow header")
	case http.StatusRequestEntityTooLarge:
		return NewProblem(he.Code, SlugPayloadTooLarge, "request body too large")
	case http.StatusUnsupportedMediaType:
		return NewProblem(he.Code, SlugUnsupportedMedia, "request body must be application/json")
	case http.StatusUnauthorized:
		return NewProblem(he.Code, SlugUnauthorized, "missing or invalid credentials")
	case http.StatusForbidden:
		return NewProblem(he.Code, SlugForbidden, "forbidden")
	case http.StatusTooManyRequests:
		return NewProblem(he.Code, SlugRateLimited, "too many requests")
	case http.StatusServiceUnavailable:
		p := NewProblem(he.Code, SlugUnavailable, "service unavailable")
		p.RetryAfter = defaultRetryAfterSecs
		return p
	}
	if he.Code >= 400 && he.Code < 500 {
		return NewProblem(he.Code, SlugMalformed, http.StatusText(he.Code))
	}
	return NewProblem(http.StatusInternalServerError, SlugInternal, "internal error")
}

// errorHandler is Echo's HTTPErrorHandler: every error becomes problem+json.
func errorHandler(log *zap.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p, unexpected := problemFor(err)
		if unexpected {
			log.Error("request failed",
				zap.String("request_id", requestID(c)),
				zap.String("route", c.Path()),
				zap.Error(err))
		}
		h := c.Response().Header()
		if p.RetryAfter > 0 {
			h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
		}
		for k, v := range p.Headers {
			h.Set(k, v)
		}
		h.Set(echo.HeaderContentType, problemContentType)
		c.Response().WriteHeader(p.Status)
		if c.Request().Method == http.MethodHead {
			return
		}
		if err := writeJSON(c.Response(), p); err != nil {
			log.Debug("writing problem", zap.Error(err))
		}
	}
}
