package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// The client reads codes through the domain's table; this is what keeps
// the two from drifting apart: a code added to the domain fails here
// until it has a sentinel or is said not to reach clients.
func TestEveryDomainCodeHasASentinelOrIsNotSurfaced(t *testing.T) {
	t.Parallel()
	for _, c := range api.Codes() {
		_, hasSentinel := codeErrors[c]
		if hasSentinel == notSurfaced[c] {
			t.Errorf("code %q: got sentinel %v and not surfaced %v, want exactly one of them", c, hasSentinel, notSurfaced[c])
		}
	}
	seen := map[error]leasegate.Code{}
	for c, s := range codeErrors {
		if !known(c) {
			t.Errorf("code %q has a sentinel but is not in the domain's table", c)
		}
		if other, dup := seen[s]; dup {
			t.Errorf("codes %q and %q share the sentinel %v", c, other, s)
		}
		seen[s] = c
	}
	for c := range notSurfaced {
		if !known(c) {
			t.Errorf("code %q is listed as not surfaced but is not in the domain's table", c)
		}
	}
}

// problemServer answers GET /<code> with the problem the gateway sends
// for code, and GET /plain/<status> with a text answer of that status, as
// a proxy in between would.
func problemServer(t *testing.T) *Client {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s, ok := strings.CutPrefix(r.URL.Path, "/plain/"); ok {
			n, _ := strconv.Atoi(s)
			http.Error(w, "from a proxy", n)
			return
		}
		c := leasegate.Code(strings.TrimPrefix(r.URL.Path, "/"))
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(api.Status(c))
		fmt.Fprintf(w, `{"type":%q,"title":"t","status":%d,"detail":"d"}`, api.Type(c), api.Status(c))
	}))
	t.Cleanup(hs.Close)
	return New(hs.URL)
}

func TestEveryProblemIsReadByItsCode(t *testing.T) {
	t.Parallel()
	c := problemServer(t)
	for _, code := range api.Codes() {
		t.Run(string(code), func(t *testing.T) {
			_, err := c.do(context.Background(), http.MethodGet, "/"+string(code), nil, nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *Error", err)
			}
			if e.Code != code || e.Status != api.Status(code) || e.RetryAfter != 7*time.Second {
				t.Errorf("got code %q status %d retry after %v, want %q %d 7s", e.Code, e.Status, e.RetryAfter, code, api.Status(code))
			}
			if s, ok := codeErrors[code]; ok && !errors.Is(err, s) {
				t.Errorf("got %v, want it to match %v", err, s)
			}
			for other, s := range codeErrors {
				if other != code && errors.Is(err, s) {
					t.Errorf("got %v matching %v, the sentinel of %q", err, s, other)
				}
			}
			if got := leasegate.ErrorCode(err); got != code {
				t.Errorf("got leasegate.ErrorCode %q, want %q", got, code)
			}
		})
	}
}

func TestAnAnswerThatIsNoProblemGetsTheCodeOfItsStatus(t *testing.T) {
	t.Parallel()
	c := problemServer(t)
	want := map[int]leasegate.Code{
		http.StatusBadGateway:                  leasegate.CodeUnavailable,
		http.StatusGatewayTimeout:              leasegate.CodeUnavailable,
		http.StatusTooManyRequests:             leasegate.CodeRateLimited,
		http.StatusMethodNotAllowed:            leasegate.CodeMalformed,
		http.StatusRequestHeaderFieldsTooLarge: leasegate.CodeMalformed,
		api.StatusClientClosedRequest:          leasegate.CodeMalformed,
		http.StatusTeapot:                      leasegate.CodeMalformed,
		http.StatusNotImplemented:              leasegate.CodeInternal,
		// limit-mismatch and claim-in-progress share 409: a bare 409 is
		// nobody's in particular.
		http.StatusConflict: leasegate.CodeMalformed,
	}
	// Every status of the table that one surfaced code has names it.
	for _, code := range api.Codes() {
		if _, ok := want[api.Status(code)]; !ok && !notSurfaced[code] {
			want[api.Status(code)] = code
		}
	}
	for status, code := range want {
		_, err := c.do(context.Background(), http.MethodGet, "/plain/"+strconv.Itoa(status), nil, nil)
		var e *Error
		if !errors.As(err, &e) || e.Code != code || e.Status != status {
			t.Errorf("status %d: got %#v, want code %q", status, err, code)
		}
	}
}

// known reports whether c is in the table of package api.
func known(c leasegate.Code) bool {
	_, ok := api.CodeOfType(api.Type(c))
	return ok
}

// TestTheRoutesAnswerWithTheDomainsSentinels: a not-found or forbidden
// answer matches the domain's sentinel of the route that was called, as
// well as the code's own.
func TestTheRoutesAnswerWithTheDomainsSentinels(t *testing.T) {
	t.Parallel()
	var code leasegate.Code
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", api.ProblemContentType)
		w.WriteHeader(api.Status(code))
		fmt.Fprintf(w, `{"type":%q,"title":"t","status":%d,"detail":"d"}`, api.Type(code), api.Status(code))
	}))
	t.Cleanup(hs.Close)
	c, ctx := New(hs.URL), context.Background()
	lease := &Lease{Resource: "r", Owner: "o", Token: 1, TTL: time.Second}
	permit := &Permit{Name: "s", Owner: "o", Token: 1, TTL: time.Second}
	claim := &Claim{Scope: "s", Key: "k", Owner: "o", Token: 1}
	cases := []struct {
		name string
		code leasegate.Code
		call func() error
		want error
	}{
		{"Status", leasegate.CodeNotFound, func() error { _, err := c.Status(ctx, "r"); return err }, leasegate.ErrLockNotHeld},
		{"Renew", leasegate.CodeForbidden, func() error { _, err := c.Renew(ctx, lease, 0); return err }, leasegate.ErrLockForbidden},
		{"Release", leasegate.CodeNotFound, func() error { return c.Release(ctx, lease) }, leasegate.ErrLockNotHeld},
		{"ReleasePermit", leasegate.CodeForbidden, func() error { return c.ReleasePermit(ctx, permit) }, leasegate.ErrSemaphoreForbidden},
		{"SemaphoreStatus", leasegate.CodeNotFound, func() error { _, err := c.SemaphoreStatus(ctx, "s"); return err }, leasegate.ErrSemaphoreNotHeld},
		{"GetClaim", leasegate.CodeNotFound, func() error { _, err := c.GetClaim(ctx, "s", "k"); return err }, leasegate.ErrClaimNotFound},
		{"AbandonClaim", leasegate.CodeForbidden, func() error { return c.AbandonClaim(ctx, claim) }, leasegate.ErrClaimForbidden},
		{"Unban", leasegate.CodeNotFound, func() error { return c.Unban(ctx, "u") }, leasegate.ErrUserNotFound},
		{"an outage anywhere", leasegate.CodeUnavailable, func() error { return c.Unban(ctx, "u") }, leasegate.ErrUnavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code = tc.code
			err := tc.call()
			if !errors.Is(err, tc.want) || !errors.Is(err, codeErrors[tc.code]) {
				t.Errorf("got %v, want it to match %v and %v", err, tc.want, codeErrors[tc.code])
			}
		})
	}
}
