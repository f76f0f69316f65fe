package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// Plain keys of the test keyring (the keyring itself holds only hashes):
// tenant a has a client and an ops key, tenant b a client key.
const (
	keyClientA = "client-a-0123456789abcdef"
	keyClientB = "client-b-0123456789abcdef"
	keyOpsA    = "ops-a-0123456789abcdef"
)

// authApp is the gateway's routes on b behind an auth.Keyring of the
// test keys, with cfg (nil: handlers.DefaultConfig()) and, if userLocks,
// the user locks and the ops review.
func authApp(t *testing.T, b *redistest.Backend, cfg *handlers.Config, userLocks bool) *apptest.App {
	t.Helper()
	return apptest.NewApp(t, b, apptest.Options{
		Config: cfg, Prefix: "lg:", UserLocks: userLocks,
		Keys: []string{
			"client-a:client:a:" + auth.HashKey(keyClientA),
			"client-b:client:b:" + auth.HashKey(keyClientB),
			"ops-a:ops:a:" + auth.HashKey(keyOpsA),
		},
	})
}

// authz is an Authorization header for apptest.Do: v is the whole value,
// "" sends none.
func authz(v string) []string {
	if v == "" {
		return nil
	}
	return []string{"Authorization", v}
}

func TestUnauthenticatedRequestsGetOneIdentical401(t *testing.T) {
	t.Parallel()
	app := authApp(t, redistest.OnMini(t), nil, false)
	e := app.E
	cases := []struct{ name, auth string }{
		{"no Authorization header", ""},
		{"an unknown key of a plausible length", "Bearer unknown-0123456789abcdef"},
		{"a key too short to be valid", "Bearer short"},
		{"a key longer than any valid key", "Bearer " + strings.Repeat("k", auth.MaxKeyLen+1)},
		{"a real key with one byte appended", "Bearer " + keyClientA + "x"},
		{"a real key missing its last byte", "Bearer " + keyClientA[:len(keyClientA)-1]},
		{"the Basic scheme", "Basic Y2xpZW50LWE6cGFzc3dvcmQ="},
		{"a real key with no scheme", keyClientA},
		{"the scheme without a key", "Bearer"},
		{"the scheme and a space", "Bearer "},
		{"two spaces before the key", "Bearer  " + keyClientA},
		{"a key with a trailing space", "Bearer " + keyClientA + " "},
		{"a key with characters outside RFC 6750", "Bearer client-a-0123456789abcdef!"},
		{"the SHA-256 of a real key instead of the key", "Bearer " + auth.HashKey(keyClientA)},
	}
	var first []byte
	for _, tc := range cases {
		t.Run(tc.name+" is refused with 401", func(t *testing.T) {
			for _, target := range []string{"/locks/pay-42", "/metrics"} {
				method, body := http.MethodGet, ""
				if strings.HasPrefix(target, "/locks/") {
					method, body = http.MethodPost, `{"owner":"svc","ttl_seconds":30}`
				}
				r := apptest.Do(t, e, method, target, body, authz(tc.auth)...)
				r.Problem(t, http.StatusUnauthorized, "unauthorized")
				r.HeaderIs(t, "WWW-Authenticate", "Bearer")
				if first == nil {
					first = r.Raw
				} else if !bytes.Equal(r.Raw, first) {
					t.Errorf("got body %s, want the same body as every other refusal: %s", r.Raw, first)
				}
			}
		})
	}
	t.Run("two Authorization headers are refused even when both are valid", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/locks/pay-42", nil)
		req.Header.Add("Authorization", "Bearer "+keyClientA)
		req.Header.Add("Authorization", "Bearer "+keyClientB)
		if r := apptest.Serve(e, req); r.StatusCode != http.StatusUnauthorized || !bytes.Equal(r.Raw, first) {
			t.Errorf("got %d %s, want 401 with the common body", r.StatusCode, r.Raw)
		}
	})
	t.Run("no refused request wrote anything to Redis", func(t *testing.T) {
		if keys := app.Backend.Keys(t); len(keys) != 0 {
			t.Errorf("got keys %q, want none", keys)
		}
	})
}

func TestAuthenticatedRequests(t *testing.T) {
	t.Parallel()
	e := authApp(t, redistest.OnMini(t), nil, false).E
	t.Run("a client key may take a lock", func(t *testing.T) {
		r := apptest.Do(t, e, http.MethodPost, "/locks/job", `{"owner":"svc","ttl_seconds":30}`, authz("Bearer "+keyClientA)...)
		if r.StatusCode != http.StatusOK || !bytes.Contains(r.Raw, []byte(`"acquired":true`)) {
			t.Errorf("got %d %s, want 200 acquired", r.StatusCode, r.Raw)
		}
	})
	t.Run("the scheme name is case-insensitive", func(t *testing.T) {
		r := apptest.Do(t, e, http.MethodGet, "/locks/job", "", authz("bearer "+keyClientA)...)
		if r.StatusCode != http.StatusOK {
			t.Errorf("got %d %s, want 200", r.StatusCode, r.Raw)
		}
	})
	t.Run("an ops key may use client routes in its tenant", func(t *testing.T) {
		r := apptest.Do(t, e, http.MethodGet, "/locks/job", "", authz("Bearer "+keyOpsA)...)
		if r.StatusCode != http.StatusOK {
			t.Errorf("got %d %s, want 200 (ops-a is in tenant a, like client-a)", r.StatusCode, r.Raw)
		}
	})
	t.Run("a client key on /metrics is forbidden", func(t *testing.T) {
		apptest.Do(t, e, http.MethodGet, "/metrics", "", authz("Bearer "+keyClientA)...).Problem(t, http.StatusForbidden, "forbidden")
	})
	t.Run("an ops key may read /metrics", func(t *testing.T) {
		r := apptest.Do(t, e, http.MethodGet, "/metrics", "", authz("Bearer "+keyOpsA)...)
		if r.StatusCode != http.StatusOK || !bytes.Contains(r.Raw, []byte("leasegate_http_request_duration_seconds")) {
			t.Errorf("got %d, want 200 with leasegate metrics", r.StatusCode)
		}
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, auth := range []string{"", "Bearer not-a-key-of-anyone-here", "Basic Zm9vOmJhcg=="} {
			t.Run(path+" needs no key (Authorization "+quoted(auth)+")", func(t *testing.T) {
				r := apptest.Do(t, e, http.MethodGet, path, "", authz(auth)...)
				if r.StatusCode != http.StatusOK {
					t.Errorf("got %d %s, want 200", r.StatusCode, r.Raw)
				}
			})
		}
	}
}

func quoted(s string) string {
	if s == "" {
		return "absent"
	}
	return "\"" + s + "\""
}

func TestMetricsAuthNone(t *testing.T) {
	t.Parallel()
	cfg := handlers.DefaultConfig()
	cfg.MetricsPublic = true
	e := authApp(t, redistest.OnMini(t), &cfg, false).E
	t.Run("/metrics needs no key", func(t *testing.T) {
		if r := apptest.Do(t, e, http.MethodGet, "/metrics", ""); r.StatusCode != http.StatusOK {
			t.Errorf("got %d %s, want 200", r.StatusCode, r.Raw)
		}
	})
	t.Run("locks still need a key", func(t *testing.T) {
		if r := apptest.Do(t, e, http.MethodGet, "/locks/x", ""); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("got %d %s, want 401", r.StatusCode, r.Raw)
		}
	})
}

// opsOnly reports whether the contract reserves method on path for ops
// keys.
func opsOnly(method, path string) bool {
	// GET /locks is the operators' listing; POST and DELETE /locks are
	// lock sets, a client's.
	return path == "/metrics" || strings.HasPrefix(path, "/abuse/") || path == "/ops" || strings.HasPrefix(path, "/ops/") ||
		(path == "/locks" && method == http.MethodGet) || path == "/audit"
}

// concrete turns a route template into a request path: each :param and *
// becomes a harmless value.
func concrete(template string) string {
	parts := strings.Split(template, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || p == "*" {
			parts[i] = "x"
		}
	}
	return strings.Join(parts, "/")
}

// TestEveryRouteButHealthNeedsAKey walks every registered route, so routes
// added later (ops review, /openapi.yaml) are covered without editing it.
func TestEveryRouteButHealthNeedsAKey(t *testing.T) {
	t.Parallel()
	e := authApp(t, redistest.OnMini(t), nil, false).E
	var unauthorized []byte
	for _, rt := range e.Routes() {
		path := concrete(rt.Path)
		if rt.Path == "/healthz" || rt.Path == "/readyz" {
			continue
		}
		t.Run(rt.Method+" "+rt.Path+" without a key is 401", func(t *testing.T) {
			r := apptest.Do(t, e, rt.Method, path, "")
			if r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("got %d %s, want 401", r.StatusCode, r.Raw)
			}
			if unauthorized == nil {
				unauthorized = r.Raw
			} else if !bytes.Equal(r.Raw, unauthorized) {
				t.Errorf("got body %s, want %s", r.Raw, unauthorized)
			}
		})
		if opsOnly(rt.Method, rt.Path) {
			t.Run(rt.Method+" "+rt.Path+" with a client key is 403", func(t *testing.T) {
				r := apptest.Do(t, e, rt.Method, path, "", authz("Bearer "+keyClientA)...)
				if r.StatusCode != http.StatusForbidden {
					t.Errorf("got %d %s, want 403", r.StatusCode, r.Raw)
				}
			})
		} else {
			t.Run(rt.Method+" "+rt.Path+" with a client key passes authentication", func(t *testing.T) {
				req := apptest.Request(rt.Method, path, "", authz("Bearer "+keyClientA)...)
				if strings.HasSuffix(rt.Path, "/events") {
					// A stream ends with its client: this one has gone.
					ctx, cancel := context.WithCancel(req.Context())
					cancel()
					req = req.WithContext(ctx)
				}
				r := apptest.Serve(e, req)
				if r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden {
					t.Errorf("got %d %s, want the route's own answer", r.StatusCode, r.Raw)
				}
			})
		}
	}
}
