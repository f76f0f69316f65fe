// Package client is the Go client of a leasegate gateway.
//
// Errors from the gateway are *Error values; check them with errors.Is
// against the domain's sentinels where one has the answer's meaning
// (leasegate.ErrUnavailable, leasegate.ErrBanned, leasegate.ErrLockNotHeld
// from the lock routes, ...) and against the sentinels below for the
// codes the domain has no one value for (ErrNotFound, ErrForbidden, ...). Each
// answer's error code (Error.Code) is read through the domain's one table
// (api.CodeOfType), so the client and the gateway cannot disagree on
// a slug. Locks, UserLocks and Flags serve the domain's service
// interfaces over HTTP, with the domain's errors.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// Sentinels matched by errors.Is on an *Error, by the answer's error code,
// for the codes that have no one domain sentinel (unavailable is
// leasegate.ErrUnavailable, abnormal-usage-detected leasegate.ErrBanned,
// limit-mismatch and claim-in-progress the domain's of the same name).
var (
	ErrValidation       = errors.New("leasegate: validation failed")
	ErrMalformed        = errors.New("leasegate: malformed request")
	ErrNotFound         = errors.New("leasegate: not found")
	ErrForbidden        = errors.New("leasegate: forbidden")
	ErrUnauthorized     = errors.New("leasegate: unauthorized")
	ErrTooLarge         = errors.New("leasegate: payload too large")
	ErrUnsupportedMedia = errors.New("leasegate: unsupported media type")
	ErrRateLimited      = errors.New("leasegate: rate limited")
	ErrInternal         = errors.New("leasegate: internal error")
)

// codeErrors gives each error code of the contract's table its sentinel. A
// code missing here must be in notSurfaced; a test holds the two to
// api.Codes().
var codeErrors = map[leasegate.Code]error{
	leasegate.CodeValidation:       ErrValidation,
	leasegate.CodeMalformed:        ErrMalformed,
	leasegate.CodeNotFound:         ErrNotFound,
	leasegate.CodeForbidden:        ErrForbidden,
	leasegate.CodeUnauthorized:     ErrUnauthorized,
	leasegate.CodePayloadTooLarge:  ErrTooLarge,
	leasegate.CodeUnsupportedMedia: ErrUnsupportedMedia,
	leasegate.CodeRateLimited:      ErrRateLimited,
	leasegate.CodeAbnormalUsage:    leasegate.ErrBanned,
	leasegate.CodeUnavailable:      leasegate.ErrUnavailable,
	leasegate.CodeInternal:         ErrInternal,
	leasegate.CodeLimitMismatch:    leasegate.ErrLimitMismatch,
	leasegate.CodeClaimInProgress:  leasegate.ErrClaimInProgress,
}

// notSurfaced are the codes no answer carries to a client, so they have
// no sentinel: request-timeout is the 499 the gateway only logs when the
// client has gone away.
var notSurfaced = map[leasegate.Code]bool{
	leasegate.CodeRequestTimeout: true,
}

// FieldError is one entry of a validation problem's errors.
type FieldError = leasegate.FieldError

// Error is a problem+json answer from the gateway.
type Error struct {
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Status     int           `json:"status"`
	Detail     string        `json:"detail"`
	Errors     []FieldError  `json:"errors,omitempty"`
	RetryAfter time.Duration `json:"-"`
	// RateLimit is the answer's RateLimit header fields, nil without
	// them (a banned user's 429 on a user lock carries them).
	RateLimit *RateLimit `json:"-"`
	// Code is the answer's error code: from its type when that is one of
	// the gateway's, otherwise from its status (an answer that was not
	// the gateway's problem, from a proxy in between, say).
	Code leasegate.Code `json:"-"`

	// domain is the domain error the answer stands for in the service
	// interface that asked (Locks, UserLocks, Flags); nil otherwise.
	domain error
}

func (e *Error) Error() string {
	return fmt.Sprintf("leasegate: %d %s: %s", e.Status, e.Slug(), e.Detail)
}

// Slug is the last path segment of the problem type, e.g. "forbidden".
func (e *Error) Slug() string {
	i := strings.LastIndexByte(e.Type, '/')
	return e.Type[i+1:]
}

// Is matches the sentinel of the answer's code.
func (e *Error) Is(target error) bool {
	s, ok := codeErrors[e.Code]
	return ok && s == target
}

// Unwrap is the domain error the answer stands for: from the service
// interfaces, the domain's sentinel (leasegate.ErrLockNotHeld, ...) or a
// *leasegate.BannedError; otherwise a *leasegate.Error with the answer's
// code, message, fields and Retry-After, so leasegate.ErrorCode works on
// every answer.
func (e *Error) Unwrap() error {
	if e.domain != nil {
		return e.domain
	}
	return &leasegate.Error{Code: e.Code, Message: e.Detail, Fields: e.Errors, RetryAfter: e.RetryAfter}
}

// invalidError is a request the client refuses before sending it. It
// matches ErrValidation and unwraps to a validation *leasegate.Error.
type invalidError struct{ e *leasegate.Error }

// invalid refuses field with message.
func invalid(field, message string) error {
	return &invalidError{leasegate.Invalid(FieldError{Field: field, Message: message})}
}

func (v *invalidError) Error() string   { return ErrValidation.Error() + ": " + v.e.Message }
func (v *invalidError) Unwrap() []error { return []error{ErrValidation, v.e} }

// noAnswerError marks a request that got no answer, or a cut-off one: the
// caller cannot tell whether the gateway acted.
type noAnswerError struct{ err error }

func (n noAnswerError) Error() string { return n.err.Error() }
func (n noAnswerError) Unwrap() error { return n.err }

// Client talks to one gateway. It is safe for concurrent use.
type Client struct {
	base   string
	apiKey string
	hc     *http.Client

	retryPolicy *RetryPolicy // nil: DefaultRetryPolicy
}

// Option configures a Client.
type Option func(*Client)

// WithAPIKey sends Authorization: Bearer key on every request.
func WithAPIKey(key string) Option { return func(c *Client) { c.apiKey = key } }

// WithHTTPClient uses hc instead of a default client with a 60 s timeout.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client for the gateway at baseURL: http://127.0.0.1:8080,
// or unix:/path for a gateway on the same host listening on a Unix domain
// socket (leasegate serve --addr unix:/path). WithHTTPClient replaces the
// client that dials the socket.
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		base: strings.TrimRight(baseURL, "/"),
		hc:   &http.Client{Timeout: 60 * time.Second},
	}
	if path, ok := strings.CutPrefix(baseURL, "unix:"); ok {
		c.base, c.hc.Transport = "http://localhost", UnixTransport(path)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// UnixTransport is an HTTP transport that reaches every URL through the
// Unix domain socket at path (a gateway on `leasegate serve --addr
// unix:/path`); the URL's host is not dialled.
func UnixTransport(path string) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	return t
}

// do sends one request. body, when not nil, is sent as JSON; a 2xx answer
// is decoded into out when out is not nil; any other answer is an *Error
// (or a transport error, wrapped).
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	status, _, err := c.doHeader(ctx, method, path, body, out)
	return status, err
}

// doHeader is do that also returns the answer's header fields.
func (c *Client) doHeader(ctx context.Context, method, path string, body, out any) (int, http.Header, error) {
	var rd io.Reader
	if raw, ok := body.(rawBody); ok {
		rd = bytes.NewReader(raw) // sent as it is: a claim's result keeps its bytes
	} else if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("leasegate: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := c.newRequest(ctx, method, path, rd, "application/json, application/problem+json")
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("leasegate: %s %s: %w", method, path, noAnswerError{err})
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("leasegate: read answer: %w", noAnswerError{err})
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil && len(data) > 0 {
			if err := json.Unmarshal(data, out); err != nil {
				return resp.StatusCode, resp.Header, fmt.Errorf("leasegate: decode answer: %w", err)
			}
		}
		return resp.StatusCode, resp.Header, nil
	}
	return resp.StatusCode, resp.Header, answerError(resp, data)
}

// newRequest is a request to the gateway at path, accepting accept, with
// the API key when there is one and the trace context of ctx.
func (c *Client) newRequest(ctx context.Context, method, path string, body io.Reader, accept string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("leasegate: %w", err)
	}
	req.Header.Set("Accept", accept)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	injectTrace(ctx, req.Header)
	return req, nil
}

// answerError is the *Error of a non-2xx answer whose body is data: its
// problem, or one named by the status when the body is not a problem.
func answerError(resp *http.Response, data []byte) *Error {
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(data, e) != nil || e.Type == "" {
		e.Type = "about:blank/" + string(codeForStatus(resp.StatusCode))
		e.Title = http.StatusText(resp.StatusCode)
		e.Detail = strings.TrimSpace(string(data))
	}
	if c, ok := api.CodeOfType(e.Type); ok {
		e.Code = c
	} else {
		e.Code = codeForStatus(resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		var secs int
		if _, err := fmt.Sscanf(ra, "%d", &secs); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	if rl, ok := ParseRateLimit(resp.Header); ok {
		e.RateLimit = &rl
	}
	return e
}

// statusCodes inverts the domain's table where a status has exactly one
// code that answers carry.
var statusCodes = func() map[int]leasegate.Code {
	byStatus := map[int][]leasegate.Code{}
	for _, c := range api.Codes() {
		if notSurfaced[c] {
			continue
		}
		byStatus[api.Status(c)] = append(byStatus[api.Status(c)], c)
	}
	out := map[int]leasegate.Code{}
	for s, cs := range byStatus {
		if len(cs) == 1 {
			out[s] = cs[0]
		}
	}
	return out
}()

// codeForStatus names the code of an answer that was not one of the
// gateway's problems (a proxy in between, say), by the domain's table.
func codeForStatus(status int) leasegate.Code {
	switch status {
	case http.StatusTooManyRequests:
		// rate-limited and abnormal-usage-detected share 429; a ban is
		// only ever the gateway's own problem answer.
		return leasegate.CodeRateLimited
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		// A proxy could not reach the gateway, or not in time.
		return leasegate.CodeUnavailable
	}
	if c, ok := statusCodes[status]; ok {
		return c
	}
	if status >= 500 {
		return leasegate.CodeInternal
	}
	return leasegate.CodeMalformed
}

// injectTrace writes ctx's trace context into h (traceparent, and
// whatever else the global propagator carries), so that the gateway's
// spans continue the caller's trace. It uses OpenTelemetry's global
// propagator, which a program that traces sets
// (otel.SetTextMapPropagator(propagation.TraceContext{})); unset, it is a
// no-op and nothing is sent.
func injectTrace(ctx context.Context, h http.Header) {
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(h))
}
