package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// Resource names chosen to collide across tenants: the same name in both,
// and names that would forge tenant b's hash tag ("{t=b;r=shared}") from
// tenant a if the tag were built without escaping.
var collidingNames = []string{
	"shared",
	"{shared}",
	"shared}",
	"{",
	"}",
	"t=b;r=shared",
	"b;r=shared",
	";r=shared",
	"}{t=b;r=shared}",
	"shared}:lock",
	"%7Bt%3Db%3Br%3Dshared%7D",
	"%", "%25", "a:fence", "x;y=z:%",
	"ü",
}

type lockBody struct {
	Acquired bool `json:"acquired"`
	Lock     struct {
		Resource  string `json:"resource"`
		Owner     string `json:"owner"`
		Token     int64  `json:"token"`
		ExpiresAt string `json:"expires_at"`
	} `json:"lock"`
}

func decodeLock(t *testing.T, r *apptest.Answer) lockBody {
	t.Helper()
	var b lockBody
	if err := json.Unmarshal(r.Raw, &b); err != nil {
		t.Fatalf("decode %s: %v", r.Raw, err)
	}
	return b
}

// TestTenantIsolation: tenant a cannot see or touch tenant b's locks,
// for resource names chosen to collide, on both backends.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, be *redistest.Backend) {
		testTenantIsolation(t, authApp(t, be, nil, false).E, func() []string { return be.Keys(t) })
	})
}

func testTenantIsolation(t *testing.T, e *echo.Echo, keys func() []string) {
	const a, b = "Bearer " + keyClientA, "Bearer " + keyClientB
	for _, name := range collidingNames {
		path := "/locks/" + url.PathEscape(name)
		t.Run("tenant a cannot see or touch tenant b's lock on "+quoted(name), func(t *testing.T) {
			r := apptest.Do(t, e, http.MethodPost, path, `{"owner":"svc","ttl_seconds":60}`, authz(b)...)
			held := decodeLock(t, r)
			if r.StatusCode != http.StatusOK || !held.Acquired || held.Lock.Resource != name {
				t.Fatalf("b acquire: got %d %s, want 200 acquired on %q", r.StatusCode, r.Raw, name)
			}

			if r := apptest.Do(t, e, http.MethodGet, path, "", authz(a)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a status: got %d %s, want 404", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, e, http.MethodDelete, path+"?owner=svc", "", authz(a)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a release with b's owner: got %d %s, want 404", r.StatusCode, r.Raw)
			}
			tok := `{"owner":"svc","ttl_seconds":600,"token":` + jsonInt(held.Lock.Token) + `}`
			if r := apptest.Do(t, e, http.MethodPost, path+"/renew", tok, authz(a)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a renew with b's owner and token: got %d %s, want 404", r.StatusCode, r.Raw)
			}
			r = apptest.Do(t, e, http.MethodPost, path, `{"owner":"svc","ttl_seconds":5}`, authz(a)...)
			mine := decodeLock(t, r)
			if r.StatusCode != http.StatusOK || !mine.Acquired {
				t.Errorf("a acquire: got %d %s, want 200 acquired (no contention with b)", r.StatusCode, r.Raw)
			}

			r = apptest.Do(t, e, http.MethodGet, path, "", authz(b)...)
			still := decodeLock(t, r)
			if r.StatusCode != http.StatusOK || still.Lock.Token != held.Lock.Token || still.Lock.ExpiresAt != held.Lock.ExpiresAt || still.Lock.Owner != "svc" {
				t.Errorf("b status after a's calls: got %d %s, want b's lock unchanged (token %d, expires %s)",
					r.StatusCode, r.Raw, held.Lock.Token, held.Lock.ExpiresAt)
			}

			if r := apptest.Do(t, e, http.MethodDelete, path+"?owner=svc", "", authz(a)...); r.StatusCode != http.StatusNoContent {
				t.Errorf("a releases its own lock: got %d %s, want 204", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, e, http.MethodGet, path, "", authz(b)...); r.StatusCode != http.StatusOK {
				t.Errorf("b status after a released its own: got %d %s, want 200", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, e, http.MethodDelete, path+"?owner=svc", "", authz(b)...); r.StatusCode != http.StatusNoContent {
				t.Errorf("b releases: got %d %s, want 204", r.StatusCode, r.Raw)
			}
		})
	}

	t.Run("every Redis key lives under its own tenant's hash tag", func(t *testing.T) {
		locks := redislock.New(nil, redislock.Config{Prefix: "lg:"})
		want := map[string]bool{}
		// Every lock was released: its lock hash's tombstone (the token
		// alone, docs/keys.md) is left.
		for _, name := range collidingNames {
			for _, tenant := range []string{"a", "b"} {
				lock, _ := locks.Tenant(tenant).Keys(name)
				want[lock] = true
			}
		}
		got := keys()
		for _, k := range got {
			if !want[k] {
				t.Errorf("unexpected key %q", k)
			}
			delete(want, k)
		}
		for k := range want {
			t.Errorf("missing key %q", k)
		}
		tags := map[string]bool{}
		for _, name := range collidingNames {
			for _, tenant := range []string{"a", "b"} {
				tag := keyspace.HashTag(tenant, name)
				if tags[tag] {
					t.Errorf("hash tag %q is shared", tag)
				}
				tags[tag] = true
				if strings.Count(tag, "{") != 1 || strings.Count(tag, "}") != 1 || !strings.HasPrefix(tag, "{t="+tenant+";r=") {
					t.Errorf("tag %q of tenant %q is not one brace pair starting {t=%s;r=", tag, tenant, tenant)
				}
			}
		}
	})
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
