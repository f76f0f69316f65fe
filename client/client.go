// Package client is the Go client of a leasegate gateway.
//
// Errors from the gateway are *Error values; check them with errors.Is
// against the sentinels below (ErrNotFound, ErrForbidden, ...).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Sentinels matched by errors.Is on an *Error, by the problem type's slug.
var (
	ErrValidation    = errors.New("leasegate: validation failed")
	ErrMalformed     = errors.New("leasegate: malformed request")
	ErrNotFound      = errors.New("leasegate: not found")
	ErrForbidden     = errors.New("leasegate: forbidden")
	ErrUnauthorized  = errors.New("leasegate: unauthorized")
	ErrTooLarge      = errors.New("leasegate: payload too large")
	ErrRateLimited   = errors.New("leasegate: rate limited")
	ErrAbnormalUsage = errors.New("leasegate: abnormal usage detected")
	ErrUnavailable   = errors.New("leasegate: unavailable")
	ErrInternal      = errors.New("leasegate: internal error")
)

var slugErrors = map[string]error{
	"validation":              ErrValidation,
	"malformed-request":       ErrMalformed,
	"not-found":               ErrNotFound,
	"forbidden":               ErrForbidden,
	"unauthorized":            ErrUnauthorized,
	"payload-too-large":       ErrTooLarge,
	"rate-limited":            ErrRateLimited,
	"abnormal-usage-detected": ErrAbnormalUsage,
	"unavailable":             ErrUnavailable,
	"internal":                ErrInternal,
}

// FieldError is one entry of a validation problem's errors.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a problem+json answer from the gateway.
type Error struct {
	Type       string        `json:"type"`
	Title      string        `json:"title"`
	Status     int           `json:"status"`
	Detail     string        `json:"detail"`
	Errors     []FieldError  `json:"errors,omitempty"`
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("leasegate: %d %s: %s", e.Status, e.Slug(), e.Detail)
}

// Slug is the last path segment of the problem type, e.g. "forbidden".
func (e *Error) Slug() string {
	i := strings.LastIndexByte(e.Type, '/')
	return e.Type[i+1:]
}

// Is matches the sentinel of the problem's slug.
func (e *Error) Is(target error) bool {
	s, ok := slugErrors[e.Slug()]
	return ok && s == target
}

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

// New returns a client for the gateway at baseURL (e.g. http://127.0.0.1:8080).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		base: strings.TrimRight(baseURL, "/"),
		hc:   &http.Client{Timeout: 60 * time.Second},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// do sends one request. body, when not nil, is sent as JSON; a 2xx answer
// is decoded into out when out is not nil; any other answer is an *Error
// (or a transport error, wrapped).
func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, fmt.Errorf("leasegate: encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, fmt.Errorf("leasegate: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("leasegate: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("leasegate: read answer: %w", err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out != nil && len(data) > 0 {
			if err := json.Unmarshal(data, out); err != nil {
				return resp.StatusCode, fmt.Errorf("leasegate: decode answer: %w", err)
			}
		}
		return resp.StatusCode, nil
	}
	e := &Error{Status: resp.StatusCode}
	if json.Unmarshal(data, e) != nil || e.Type == "" {
		e.Type = "about:blank/" + slugForStatus(resp.StatusCode)
		e.Title = http.StatusText(resp.StatusCode)
		e.Detail = strings.TrimSpace(string(data))
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		var secs int
		if _, err := fmt.Sscanf(ra, "%d", &secs); err == nil && secs >= 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return resp.StatusCode, e
}

// slugForStatus names a status for answers that were not problem+json
// (a proxy in between, say).
func slugForStatus(code int) string {
	switch code {
	case http.StatusNotFound:
		return "not-found"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusTooManyRequests:
		return "rate-limited"
	case http.StatusRequestEntityTooLarge:
		return "payload-too-large"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "unavailable"
	}
	if code >= 500 {
		return "internal"
	}
	return "malformed-request"
}
