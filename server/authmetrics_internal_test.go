package server

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// postLogin posts key to /ops/login of s as a script would (no browser
// headers), with a CSRF token from the form, and returns the status.
func postLogin(t *testing.T, s *Server, key string) int {
	t.Helper()
	res, _ := get(t, s, "/ops/login", "")
	var csrf *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "leasegate_ops_csrf" {
			csrf = c
		}
	}
	if csrf == nil {
		t.Fatal("GET /ops/login: got no CSRF cookie")
	}
	form := url.Values{"csrf": {csrf.Value}, "key": {key}}
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/ops/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	_ = res.Body.Close()
	return res.StatusCode
}

func TestAuthRefusalsAreCounted(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.APIKeys = testKeyEntries()
	s := start(t, cfg, nil)

	get(t, s, "/locks/x", "")
	get(t, s, "/locks/x", "server-test-not-a-configured-key")
	get(t, s, "/locks/x", "server-test-not-a-configured-key")
	if got := postLogin(t, s, testClientKey); got != http.StatusForbidden {
		t.Fatalf("login with the client key: got %d, want 403", got)
	}
	for i := 0; i < 4; i++ {
		if got := postLogin(t, s, "server-test-not-a-configured-key"); got != http.StatusUnauthorized {
			t.Fatalf("failed login %d: got %d, want 401", i+1, got)
		}
	}
	if got := postLogin(t, s, testOpsKey); got != http.StatusTooManyRequests {
		t.Fatalf("sixth login from one address: got %d, want 429", got)
	}

	_, body := get(t, s, "/metrics", testOpsKey)
	for _, want := range []string{
		`leasegate_auth_refusals_total{reason="missing",via="bearer"} 1`,
		`leasegate_auth_refusals_total{reason="unknown",via="bearer"} 2`,
		`leasegate_auth_refusals_total{reason="role",via="login"} 1`,
		`leasegate_auth_refusals_total{reason="unknown",via="login"} 4`,
		`leasegate_auth_refusals_total{reason="rate_limited_address",via="login"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestAuthRefusalsAreExportedAtZeroInOpenMode: a gateway without keys
// refuses nothing, and still exports every via and reason at 0, so a panel
// or an alert over a mixed fleet has a series to read.
func TestAuthRefusalsAreExportedAtZeroInOpenMode(t *testing.T) {
	t.Parallel()
	s := start(t, testConfig(t), nil)
	_, body := get(t, s, "/metrics", "")
	for _, want := range []string{
		`leasegate_auth_refusals_total{reason="missing",via="bearer"} 0`,
		`leasegate_auth_refusals_total{reason="unknown",via="login"} 0`,
		`leasegate_auth_refusals_total{reason="revoked",via="session"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
