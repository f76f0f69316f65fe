package handlers_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

// Any token is a valid HTTP method, and these requests need no key (a 405
// or 404 is answered before authentication). Were the method a label as
// sent, every made-up method would add a histogram series that lives for
// the life of the process: an unauthenticated memory exhaustion.
func TestRequestMetricsHaveABoundedMethodLabel(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i := range 40 {
		for _, target := range []string{"/locks/a", "/no/such/route", "/healthz"} {
			req := httptest.NewRequest(fmt.Sprintf("MADEUP%d", i), target, nil)
			h.E.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	h.Do(t, http.MethodGet, "/healthz", "")

	res := h.Do(t, http.MethodGet, "/metrics", "")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: got %d, want 200", res.StatusCode)
	}
	known := map[string]bool{
		"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
		"DELETE": true, "CONNECT": true, "OPTIONS": true, "TRACE": true, "other": true,
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`http_request_duration_seconds_count\{[^}]*method="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
		seen[m[1]] = true
		if !known[m[1]] {
			t.Errorf("got method label %q, want one of the standard methods or \"other\"", m[1])
		}
	}
	if !seen["GET"] || !seen["other"] {
		t.Errorf("got method labels %v, want GET and other among them", seen)
	}
}
