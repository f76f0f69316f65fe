package auth

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/redislock"
)

// Plain keys of the test keyring (the keyring itself holds only hashes).
const (
	keyClientA = "client-a-0123456789abcdef"
	keyClientB = "client-b-0123456789abcdef"
	keyOpsA    = "ops-a-0123456789abcdef"
)

func testKeys(t *testing.T) []Key {
	t.Helper()
	var keys []Key
	for _, e := range []string{
		"client-a:client:a:" + HashKey(keyClientA),
		"client-b:client:b:" + HashKey(keyClientB),
		"ops-a:ops:a:" + HashKey(keyOpsA),
	} {
		k, err := ParseEntry(e)
		if err != nil {
			t.Fatalf("ParseEntry(%q): %v", e, err)
		}
		keys = append(keys, k)
	}
	return keys
}

// gateway builds the routes on rdb with the test keyring.
func gateway(t *testing.T, rdb redis.Scripter, cfg handlers.Config) *echo.Echo {
	t.Helper()
	kr, err := New(testKeys(t), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return handlers.New(cfg, handlers.Deps{
		Locks: redislock.NewService(redislock.New(rdb, redislock.Options{Prefix: "lg:"}), nil, 0),
		Auth:  kr,
	})
}

func miniGateway(t *testing.T, cfg handlers.Config) (*echo.Echo, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return gateway(t, rdb, cfg), m
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request through e.ServeHTTP. auth is the whole
// Authorization header value ("" sends none).
func do(t *testing.T, e *echo.Echo, method, target, auth, body string) response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b}
}

func problemSlug(t *testing.T, r response) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("got Content-Type %q, want application/problem+json (body %s)", ct, r.body)
	}
	var p struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem body %q: %v", r.body, err)
	}
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}

func TestUnauthenticatedRequestsGetOneIdentical401(t *testing.T) {
	e, m := miniGateway(t, handlers.DefaultConfig())
	cases := []struct{ name, auth string }{
		{"no Authorization header", ""},
		{"an unknown key of a plausible length", "Bearer unknown-0123456789abcdef"},
		{"a key too short to be valid", "Bearer short"},
		{"a key longer than any valid key", "Bearer " + strings.Repeat("k", MaxKeyLen+1)},
		{"a real key with one byte appended", "Bearer " + keyClientA + "x"},
		{"a real key missing its last byte", "Bearer " + keyClientA[:len(keyClientA)-1]},
		{"the Basic scheme", "Basic Y2xpZW50LWE6cGFzc3dvcmQ="},
		{"a real key with no scheme", keyClientA},
		{"the scheme without a key", "Bearer"},
		{"the scheme and a space", "Bearer "},
		{"two spaces before the key", "Bearer  " + keyClientA},
		{"a key with a trailing space", "Bearer " + keyClientA + " "},
		{"a key with characters outside RFC 6750", "Bearer client-a-0123456789abcdef!"},
		{"the SHA-256 of a real key instead of the key", "Bearer " + HashKey(keyClientA)},
	}
	var first []byte
	for _, tc := range cases {
		t.Run(tc.name+" is refused with 401", func(t *testing.T) {
			for _, target := range []string{"/locks/pay-42", "/metrics"} {
				method, body := http.MethodGet, ""
				if strings.HasPrefix(target, "/locks/") {
					method, body = http.MethodPost, `{"owner":"svc","ttl_seconds":30}`
				}
				r := do(t, e, method, target, tc.auth, body)
				if r.status != http.StatusUnauthorized {
					t.Fatalf("%s %s: got status %d, want 401 (body %s)", method, target, r.status, r.body)
				}
				if got := r.header.Get("WWW-Authenticate"); got != "Bearer" {
					t.Errorf("got WWW-Authenticate %q, want %q", got, "Bearer")
				}
				if slug := problemSlug(t, r); slug != "unauthorized" {
					t.Errorf("got problem type %q, want unauthorized", slug)
				}
				if first == nil {
					first = r.body
				} else if !bytes.Equal(r.body, first) {
					t.Errorf("got body %s, want the same body as every other refusal: %s", r.body, first)
				}
			}
		})
	}
	t.Run("two Authorization headers are refused even when both are valid", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodGet, "/locks/pay-42", nil)
		req.Header.Add("Authorization", "Bearer "+keyClientA)
		req.Header.Add("Authorization", "Bearer "+keyClientB)
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized || !bytes.Equal(rec.Body.Bytes(), first) {
			t.Errorf("got %d %s, want 401 with the common body", rec.Code, rec.Body.Bytes())
		}
	})
	t.Run("no refused request wrote anything to Redis", func(t *testing.T) {
		if keys := m.Keys(); len(keys) != 0 {
			t.Errorf("got keys %q, want none", keys)
		}
	})
}

func TestAuthenticatedRequests(t *testing.T) {
	e, _ := miniGateway(t, handlers.DefaultConfig())
	t.Run("a client key may take a lock", func(t *testing.T) {
		r := do(t, e, http.MethodPost, "/locks/job", "Bearer "+keyClientA, `{"owner":"svc","ttl_seconds":30}`)
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"acquired":true`)) {
			t.Errorf("got %d %s, want 200 acquired", r.status, r.body)
		}
	})
	t.Run("the scheme name is case-insensitive", func(t *testing.T) {
		r := do(t, e, http.MethodGet, "/locks/job", "bearer "+keyClientA, "")
		if r.status != http.StatusOK {
			t.Errorf("got %d %s, want 200", r.status, r.body)
		}
	})
	t.Run("an ops key may use client routes in its tenant", func(t *testing.T) {
		r := do(t, e, http.MethodGet, "/locks/job", "Bearer "+keyOpsA, "")
		if r.status != http.StatusOK {
			t.Errorf("got %d %s, want 200 (ops-a is in tenant a, like client-a)", r.status, r.body)
		}
	})
	t.Run("a client key on /metrics is forbidden", func(t *testing.T) {
		r := do(t, e, http.MethodGet, "/metrics", "Bearer "+keyClientA, "")
		if r.status != http.StatusForbidden {
			t.Fatalf("got %d %s, want 403", r.status, r.body)
		}
		if slug := problemSlug(t, r); slug != "forbidden" {
			t.Errorf("got problem type %q, want forbidden", slug)
		}
	})
	t.Run("an ops key may read /metrics", func(t *testing.T) {
		r := do(t, e, http.MethodGet, "/metrics", "Bearer "+keyOpsA, "")
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("leasegate_http_request_duration_seconds")) {
			t.Errorf("got %d, want 200 with leasegate metrics", r.status)
		}
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, auth := range []string{"", "Bearer not-a-key-of-anyone-here", "Basic Zm9vOmJhcg=="} {
			t.Run(path+" needs no key (Authorization "+quoted(auth)+")", func(t *testing.T) {
				r := do(t, e, http.MethodGet, path, auth, "")
				if r.status != http.StatusOK {
					t.Errorf("got %d %s, want 200", r.status, r.body)
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
	cfg := handlers.DefaultConfig()
	cfg.MetricsPublic = true
	e, _ := miniGateway(t, cfg)
	t.Run("/metrics needs no key", func(t *testing.T) {
		if r := do(t, e, http.MethodGet, "/metrics", "", ""); r.status != http.StatusOK {
			t.Errorf("got %d %s, want 200", r.status, r.body)
		}
	})
	t.Run("locks still need a key", func(t *testing.T) {
		if r := do(t, e, http.MethodGet, "/locks/x", "", ""); r.status != http.StatusUnauthorized {
			t.Errorf("got %d %s, want 401", r.status, r.body)
		}
	})
}

func TestKeyNameIsSetForAudit(t *testing.T) {
	kr, err := New(testKeys(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	var gotName, gotTenant string
	var gotRole leasegate.Role
	e.GET("/who", func(c echo.Context) error {
		gotName = KeyName(c)
		p, _ := c.Get(leasegate.PrincipalKey).(leasegate.Principal)
		gotTenant, gotRole = p.Tenant, p.Role
		return c.NoContent(http.StatusNoContent)
	}, kr.Middleware())
	req := httptest.NewRequest(http.MethodGet, "/who", nil)
	req.Header.Set("Authorization", "Bearer "+keyOpsA)
	e.ServeHTTP(httptest.NewRecorder(), req)
	if gotName != "ops-a" || gotTenant != "a" || gotRole != leasegate.RoleOps {
		t.Errorf("got name %q tenant %q role %q, want ops-a, a, ops", gotName, gotTenant, gotRole)
	}
}

func TestNewNeedsKeys(t *testing.T) {
	if _, err := New(nil, nil); err == nil {
		t.Errorf("New(nil): got nil error, want ErrNoKeys")
	}
	keys := testKeys(t)
	if _, err := New(append(keys, keys[0]), nil); err == nil {
		t.Errorf("New with a duplicate: got nil error, want ErrDuplicate")
	}
}

// BenchmarkLookup shows that lookup's cost does not depend on which key
// (if any) matches.
func BenchmarkLookup(b *testing.B) {
	var keys []Key
	plain := make([]string, 100)
	for i := range plain {
		plain[i], _ = GenerateKey()
		k, _ := ParseEntry("k" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ":client:t:" + HashKey(plain[i]))
		keys = append(keys, k)
	}
	kr, err := New(keys, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, key string }{
		{"first", plain[0]}, {"last", plain[99]}, {"none", "lg_nobody-has-this-key-000000000000000000000"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				kr.lookup(bc.key)
			}
		})
	}
}

// opsOnly reports whether the contract reserves path for ops keys.
func opsOnly(path string) bool {
	return path == "/metrics" || strings.HasPrefix(path, "/abuse/") || path == "/ops" || strings.HasPrefix(path, "/ops/")
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
	e, _ := miniGateway(t, handlers.DefaultConfig())
	var unauthorized []byte
	for _, rt := range e.Routes() {
		path := concrete(rt.Path)
		if rt.Path == "/healthz" || rt.Path == "/readyz" {
			continue
		}
		t.Run(rt.Method+" "+rt.Path+" without a key is 401", func(t *testing.T) {
			r := do(t, e, rt.Method, path, "", "")
			if r.status != http.StatusUnauthorized {
				t.Fatalf("got %d %s, want 401", r.status, r.body)
			}
			if unauthorized == nil {
				unauthorized = r.body
			} else if !bytes.Equal(r.body, unauthorized) {
				t.Errorf("got body %s, want %s", r.body, unauthorized)
			}
		})
		if opsOnly(rt.Path) {
			t.Run(rt.Method+" "+rt.Path+" with a client key is 403", func(t *testing.T) {
				r := do(t, e, rt.Method, path, "Bearer "+keyClientA, "")
				if r.status != http.StatusForbidden {
					t.Errorf("got %d %s, want 403", r.status, r.body)
				}
			})
		} else {
			t.Run(rt.Method+" "+rt.Path+" with a client key passes authentication", func(t *testing.T) {
				r := do(t, e, rt.Method, path, "Bearer "+keyClientA, "")
				if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
					t.Errorf("got %d %s, want the route's own answer", r.status, r.body)
				}
			})
		}
	}
}
