package handlers_test

// One test per seed attack from the distributed-lock guide that leasegate
// replaces (ATK-01 .. ATK-12). Every request goes through e.ServeHTTP.

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
)

func TestATK01_ReleaseByANonOwnerIsForbiddenAndTheLockStays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "atk01", "svc-a", 30)
	for _, req := range []struct{ name, target, body string }{
		{"owner in the query", "/locks/atk01?owner=svc-b", ""},
		{"owner in the body", "/locks/atk01", `{"owner":"svc-b"}`},
		{"another owner with the holder's token", "/locks/atk01?owner=svc-b&token=" + itoa(int(held.Token)), ""},
	} {
		t.Run(req.name, func(t *testing.T) {
			h.Do(t, http.MethodDelete, req.target, req.body).Problem(t, http.StatusForbidden, "forbidden")
			if got := h.status(t, "atk01"); got == nil || *got != held {
				t.Errorf("got %+v after a refused release, want the lock intact %+v", got, held)
			}
		})
	}
}

func TestATK02_RenewByANonOwnerIsForbidden(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "atk02", "svc-a", 30)
	res := h.Do(t, http.MethodPost, "/locks/atk02/renew", `{"owner":"svc-b","ttl_seconds":3600}`)
	res.Problem(t, http.StatusForbidden, "forbidden")
	if got := h.status(t, "atk02"); got == nil || *got != held {
		t.Errorf("got %+v, want the lock intact %+v", got, held)
	}
}

func TestATK03_ZeroOrNegativeTTLIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, ttl := range []string{"0", "-1", "-0", "-86400"} {
		t.Run("ttl_seconds "+ttl, func(t *testing.T) {
			res := h.Do(t, http.MethodPost, "/locks/atk03", `{"owner":"svc-a","ttl_seconds":`+ttl+`}`)
			res.Fields(t, "ttl_seconds")
			if got := h.status(t, "atk03"); got != nil {
				t.Errorf("got lock %+v, want nothing written", got)
			}
		})
	}
	t.Run("on renew", func(t *testing.T) {
		held := h.acquire(t, "atk03r", "svc-a", 30)
		h.Do(t, http.MethodPost, "/locks/atk03r/renew", `{"owner":"svc-a","ttl_seconds":0}`).Fields(t, "ttl_seconds")
		if got := h.status(t, "atk03r"); got == nil || *got != held {
			t.Errorf("got %+v, want unchanged %+v", got, held)
		}
	})
}

func TestATK04_TTLAboveMaxTTLIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Do(t, http.MethodPost, "/locks/atk04", `{"owner":"svc-a","ttl_seconds":86401}`).Fields(t, "ttl_seconds")
	h.Do(t, http.MethodPost, "/locks/atk04", `{"owner":"svc-a","ttl_seconds":99999999999999999999}`).Fields(t, "ttl_seconds")
	if got := h.status(t, "atk04"); got != nil {
		t.Errorf("got lock %+v, want nothing written", got)
	}
	lk := h.acquire(t, "atk04", "svc-a", 86400)
	if lk.ExpiresAt != "2026-12-01T09:30:00.000Z" {
		t.Errorf("got expires_at %q for the largest ttl, want 2026-12-01T09:30:00.000Z", lk.ExpiresAt)
	}
	h.Do(t, http.MethodPost, "/locks/atk04/renew", `{"owner":"svc-a","ttl_seconds":86401}`).Fields(t, "ttl_seconds")
}

func TestATK05_SQLLookingResourceAndOwnerAreLiterals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	resource := "x'; DROP TABLE distributed_locks; --"
	owner := `svc'); DELETE FROM locks WHERE ('1'='1`
	path := "/locks/" + url.PathEscape(resource)
	lk := h.acquire(t, url.PathEscape(resource), owner, 30)
	if lk.Resource != resource || lk.Owner != owner {
		t.Errorf("got resource %q owner %q, want them back as sent: %q %q", lk.Resource, lk.Owner, resource, owner)
	}
	if got := h.status(t, url.PathEscape(resource)); got == nil || *got != lk {
		t.Errorf("got %+v, want %+v", got, lk)
	}
	lockKey, _ := h.Locker.Keys(resource)
	if got := h.Backend.RDB.HGet(context.Background(), lockKey, "owner").Val(); got != owner {
		t.Errorf("got stored owner %q, want %q", got, owner)
	}
	// Another resource is untouched by the "injection".
	if got := h.status(t, "distributed_locks"); got != nil {
		t.Errorf("got %+v, want no lock on another resource", got)
	}
	res := h.Do(t, http.MethodDelete, path+"?owner="+url.QueryEscape(owner), "")
	if res.StatusCode != http.StatusNoContent {
		t.Errorf("got %d releasing with the literal owner, want 204", res.StatusCode)
	}
}

func TestATK06_EmptyOrWhitespaceOwnerIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, owner := range []string{`""`, `" "`, `"\t\n  "`, `"\u00a0"`} {
		t.Run("owner "+owner, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/atk06", `{"owner":`+owner+`,"ttl_seconds":30}`).Fields(t, "owner")
			h.Do(t, http.MethodPost, "/locks/atk06/renew", `{"owner":`+owner+`,"ttl_seconds":30}`).Fields(t, "owner")
			h.Do(t, http.MethodDelete, "/locks/atk06", `{"owner":`+owner+`}`).Fields(t, "owner")
		})
	}
	h.Do(t, http.MethodDelete, "/locks/atk06?owner=%20%20", "").Fields(t, "owner")
	for _, owner := range []string{`1`, `null`, `true`, `["svc"]`, `{"id":"svc"}`} {
		t.Run("a non-string owner "+owner, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/atk06", `{"owner":`+owner+`,"ttl_seconds":30}`).Fields(t, "owner")
		})
	}
	t.Run("an owner with control characters", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/atk06", `{"owner":"svc\u0000a","ttl_seconds":30}`).Fields(t, "owner")
		h.Do(t, http.MethodPost, "/locks/atk06", `{"owner":"svc\u001b[31ma","ttl_seconds":30}`).Fields(t, "owner")
	})
	t.Run("an owner over 255 bytes after trimming", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/atk06", `{"owner":"`+strings.Repeat("o", 256)+`","ttl_seconds":30}`).Fields(t, "owner")
	})
	if got := h.status(t, "atk06"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
	t.Run("an owner with surrounding spaces is trimmed", func(t *testing.T) {
		lk := h.acquire(t, "atk06", "  svc-a\t", 30)
		if lk.Owner != "svc-a" {
			t.Errorf("got owner %q, want %q", lk.Owner, "svc-a")
		}
		res := h.Do(t, http.MethodDelete, "/locks/atk06?owner=svc-a%20", "")
		if res.StatusCode != http.StatusNoContent {
			t.Errorf("got %d releasing as %q, want 204", res.StatusCode, "svc-a ")
		}
	})
}

func TestATK07_NonIntegerTTLIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, ttl := range []string{`60.5`, `60.0`, `1e3`, `1E3`, `6e1`, `"3600"`, `null`, `true`, `[60]`, `{"s":60}`, `0x10`, `+60`, `060`} {
		t.Run("ttl_seconds "+ttl, func(t *testing.T) {
			body := `{"owner":"svc-a","ttl_seconds":` + ttl + `}`
			res := h.Do(t, http.MethodPost, "/locks/atk07", body)
			if ttl == `0x10` || ttl == `+60` || ttl == `060` {
				// Not JSON at all: malformed, not invalid.
				res.Problem(t, http.StatusBadRequest, "malformed-request")
				return
			}
			res.Fields(t, "ttl_seconds")
			h.Do(t, http.MethodPost, "/locks/atk07/renew", body).Fields(t, "ttl_seconds")
		})
	}
	if got := h.status(t, "atk07"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestATK08_MissingOwnerOrTTLIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	cases := []struct {
		name, body string
		fields     []string
	}{
		{"no owner", `{"ttl_seconds":30}`, []string{"owner"}},
		{"no ttl", `{"owner":"svc-a"}`, []string{"ttl_seconds"}},
		{"an empty object", `{}`, []string{"owner", "ttl_seconds"}},
		{"no body at all", ``, []string{"owner", "ttl_seconds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/atk08", tc.body).Fields(t, tc.fields...)
			h.Do(t, http.MethodPost, "/locks/atk08/renew", tc.body).Fields(t, tc.fields...)
		})
	}
	h.Do(t, http.MethodDelete, "/locks/atk08", "").Fields(t, "owner")
	if got := h.status(t, "atk08"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestATK09_SameOwnerReacquireKeepsTheTokenAndMovesExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first := h.acquire(t, "atk09", "svc-a", 30)
	h.Backend.Advance(t, 10*time.Second)
	second := h.acquire(t, "atk09", "svc-a", 30)
	if second.Token != first.Token || second.AcquiredAt != first.AcquiredAt {
		t.Errorf("got token %d acquired_at %s, want unchanged %d %s", second.Token, second.AcquiredAt, first.Token, first.AcquiredAt)
	}
	if first.ExpiresAt != "2026-11-30T09:30:30.000Z" || second.ExpiresAt != "2026-11-30T09:30:40.000Z" {
		t.Errorf("got expires_at %s then %s, want 09:30:30.000Z then 09:30:40.000Z", first.ExpiresAt, second.ExpiresAt)
	}
	if got := h.status(t, "atk09"); got == nil || *got != second {
		t.Errorf("got %+v, want %+v", got, second)
	}
}

func TestATK10_ConcurrentAcquiresOfAFreeResourceHaveOneWinner(t *testing.T) {
	t.Parallel()
	t.Run("on miniredis", func(t *testing.T) { atk10(t, newHarness(t)) })
	t.Run("on redis-server", func(t *testing.T) { atk10(t, newRealHarness(t)) })
}

func atk10(t *testing.T, h *harness) {
	const n = 100
	results := make([]acquireJSON, n)
	redistest.Burst(n, func(i int) {
		res := h.Do(t, http.MethodPost, "/locks/atk10", `{"owner":"svc-`+itoa(i)+`","ttl_seconds":30}`)
		res.JSON(t, http.StatusOK, &results[i])
	})
	var winners []lockJSON
	for _, r := range results {
		switch {
		case r.Acquired && r.Lock != nil:
			winners = append(winners, *r.Lock)
		case !r.Acquired && (r.Resource != "atk10" || r.RetryAfterMS == nil || *r.RetryAfterMS <= 0 || *r.RetryAfterMS > 30000):
			t.Errorf("got loser answer %+v, want resource atk10 and retry_after_ms in (0, 30000]", r)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("got %d winners, want exactly 1", len(winners))
	}
	if got := h.status(t, "atk10"); got == nil || *got != winners[0] {
		t.Errorf("got %+v, want the winner %+v", got, winners[0])
	}
}

func TestATK11_StatusOfAnExpiredOrMissingLockIsNotFound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Run("never locked", func(t *testing.T) {
		h.Do(t, http.MethodGet, "/locks/atk11-none", "").Problem(t, http.StatusNotFound, "not-found")
	})
	t.Run("expired", func(t *testing.T) {
		h.acquire(t, "atk11", "svc-a", 1)
		h.Backend.Advance(t, time.Second)
		h.Do(t, http.MethodGet, "/locks/atk11", "").Problem(t, http.StatusNotFound, "not-found")
	})
	t.Run("expired but not yet reaped by Redis", func(t *testing.T) {
		h.acquire(t, "atk11-stale", "svc-a", 1)
		lockKey, _ := h.Locker.Keys("atk11-stale")
		h.Backend.RDB.Persist(context.Background(), lockKey)
		h.Backend.Advance(t, time.Second)
		if !h.Backend.Mini.Exists(lockKey) {
			t.Fatalf("the test needs the expired key to still exist")
		}
		h.Do(t, http.MethodGet, "/locks/atk11-stale", "").Problem(t, http.StatusNotFound, "not-found")
		h.Do(t, http.MethodDelete, "/locks/atk11-stale?owner=svc-a", "").Problem(t, http.StatusNotFound, "not-found")
		h.Do(t, http.MethodPost, "/locks/atk11-stale/renew", `{"owner":"svc-a","ttl_seconds":30}`).Problem(t, http.StatusNotFound, "not-found")
	})
}

func TestATK12_OverLongResourceIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct {
		name, resource string
		ok             bool
	}{
		{"255 ASCII bytes are accepted", strings.Repeat("r", 255), true},
		{"256 ASCII bytes are rejected", strings.Repeat("r", 256), false},
		{"128 two-byte runes (256 bytes) are rejected", strings.Repeat("ü", 128), false},
		{"127 two-byte runes and one byte (255 bytes) are accepted", strings.Repeat("ü", 127) + "r", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/locks/" + url.PathEscape(tc.resource)
			if tc.ok {
				if lk := h.acquire(t, url.PathEscape(tc.resource), "svc-a", 30); lk.Resource != tc.resource {
					t.Errorf("got resource %q, want %q", lk.Resource, tc.resource)
				}
				return
			}
			h.Do(t, http.MethodPost, path, `{"owner":"svc-a","ttl_seconds":30}`).Fields(t, "resource")
			h.Do(t, http.MethodGet, path, "").Fields(t, "resource")
			h.Do(t, http.MethodDelete, path+"?owner=svc-a", "").Fields(t, "resource")
			h.Do(t, http.MethodPost, path+"/renew", `{"owner":"svc-a","ttl_seconds":30}`).Fields(t, "resource")
		})
	}
}
