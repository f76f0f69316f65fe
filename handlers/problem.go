package handlers

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/metrics"
)

// errorOf maps any error to the domain error the client sees and the
// status that carries it (0: the code's), and says whether it is
// unexpected and must be logged. Domain errors (from the services, or the
// handlers' own validation) keep their code; Echo's own errors (no route,
// wrong method, ...) are mapped here; anything else is internal.
func errorOf(err error) (e *leasegate.Error, status int, unexpected bool) {
	var he *echo.HTTPError
	var de *leasegate.Error
	if errors.As(err, &he) && !errors.As(err, &de) {
		e, status = httpError(he)
		return e, status, he.Code >= 500
	}
	e, unexpected = leasegate.ErrorOf(err)
	return e, 0, unexpected
}

// httpError maps an Echo error to a domain error, with the status to
// answer where the contract has no code of its own for it.
func httpError(he *echo.HTTPError) (*leasegate.Error, int) {
	switch he.Code {
	case http.StatusNotFound:
		return leasegate.NewError(leasegate.CodeNotFound, "no such route"), 0
	case http.StatusMethodNotAllowed:
		// The contract's slug list has no 405 of its own: a wrong method is
		// a malformed request for this route (docs/api.md).
		return leasegate.NewError(leasegate.CodeMalformed, "method not allowed on this route; see the Allow header"), he.Code
	case http.StatusRequestEntityTooLarge:
		return leasegate.NewError(leasegate.CodePayloadTooLarge, "request body too large"), 0
	case http.StatusUnsupportedMediaType:
		return leasegate.NewError(leasegate.CodeUnsupportedMedia, "request body must be application/json"), 0
	case http.StatusUnauthorized:
		return leasegate.NewError(leasegate.CodeUnauthorized, "missing or invalid credentials"), 0
	case http.StatusForbidden:
		return leasegate.NewError(leasegate.CodeForbidden, "forbidden"), 0
	case http.StatusTooManyRequests:
		return leasegate.NewError(leasegate.CodeRateLimited, "too many requests"), 0
	case http.StatusServiceUnavailable:
		return &leasegate.Error{Code: leasegate.CodeUnavailable, Message: "service unavailable",
			RetryAfter: leasegate.DefaultRetryAfter}, 0
	}
	if he.Code >= 400 && he.Code < 500 {
		return leasegate.NewError(leasegate.CodeMalformed, http.StatusText(he.Code)), he.Code
	}
	return leasegate.NewError(leasegate.CodeInternal, "internal error"), 0
}

// RetryAfterSeconds is d as a Retry-After value: whole seconds, rounded
// up, at least 1.
func RetryAfterSeconds(e *leasegate.Error) int {
	return max(int(ceilSeconds(e.RetryAfter)), 1)
}

// Problem is the answer to err on c: it logs err with log when it is
// unexpected, sets the Retry-After and WWW-Authenticate header fields the
// answer needs, and returns the problem document, its status included.
// The JSON routes' error handler and the ops page's HTML one both answer
// through it.
func Problem(c echo.Context, log *zap.Logger, err error) api.Problem {
	e, status, unexpected := errorOf(err)
	if unexpected {
		log.Error("request failed",
			zap.String("request_id", RequestID(c)),
			zap.String("route", c.Path()),
			zap.Error(err))
	}
	h := c.Response().Header()
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds(e)))
	}
	if e.Code == leasegate.CodeUnauthorized {
		// RFC 9110: every 401 names a scheme; the API's is Bearer.
		h.Set(echo.HeaderWWWAuthenticate, "Bearer")
	}
	return api.ProblemOf(e, status)
}

// CountProblem counts p, just answered on c, in m
// (leasegate_http_problems_total): by the route template, as the request
// histogram labels it, and by the slug of p's type. A code outside the
// contract (a bug: it is answered 500) is counted as "unknown", so a
// label never carries free text. The JSON and the HTML error handlers
// each count the answer they write, and only then, so an answer is
// counted once even when the ops page's falls back to the JSON one.
func CountProblem(c echo.Context, m *metrics.Metrics, p api.Problem) {
	typ := "unknown"
	if code, ok := api.CodeOfType(p.Type); ok {
		typ = string(code)
	}
	m.ProblemAnswered(routeLabel(c), typ)
}

// errorHandler is Echo's HTTPErrorHandler: every error becomes problem+json.
func errorHandler(log *zap.Logger, m *metrics.Metrics) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := Problem(c, log, err)
		c.Response().Header()[echo.HeaderContentType] = ctProblem
		c.Response().WriteHeader(p.Status)
		CountProblem(c, m, p)
		if c.Request().Method == http.MethodHead {
			return
		}
		if err := writeProblem(c.Response(), p); err != nil {
			log.Debug("writing problem", zap.Error(err))
		}
	}
}
