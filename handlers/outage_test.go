package handlers_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestRedisDownIsUnavailableAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "held", "svc-a", 30)
	h.Backend.Mini.SetError("ERR injected outage")
	for _, req := range []struct{ method, target, body string }{
		{http.MethodPost, "/locks/free", `{"owner":"svc-a","ttl_seconds":30}`},
		{http.MethodPost, "/locks/held", `{"owner":"svc-b","ttl_seconds":30}`},
		{http.MethodPost, "/locks/held", `{"owner":"svc-a","ttl_seconds":300}`},
		{http.MethodGet, "/locks/held", ""},
		{http.MethodPost, "/locks/held/renew", `{"owner":"svc-a","ttl_seconds":300}`},
		{http.MethodDelete, "/locks/held?owner=svc-a", ""},
		{http.MethodGet, "/readyz", ""},
	} {
		t.Run(req.method+" "+req.target, func(t *testing.T) {
			res := h.Do(t, req.method, req.target, req.body)
			res.Problem(t, http.StatusServiceUnavailable, "unavailable")
			if got := res.Header.Get("Retry-After"); got != "1" {
				t.Errorf("got Retry-After %q, want 1", got)
			}
		})
	}
	h.Backend.Mini.SetError("")
	if got := h.status(t, "free"); got != nil {
		t.Errorf("got %+v on free, want nothing written during the outage", got)
	}
	if got := h.status(t, "held"); got == nil || *got != held {
		t.Errorf("got %+v on held, want unchanged %+v", got, held)
	}
	t.Run("the failure is logged, without the request's body", func(t *testing.T) {
		logs := h.Log.String()
		if !strings.Contains(logs, `"msg":"request failed"`) || !strings.Contains(logs, "injected outage") {
			t.Errorf("got logs %s, want a 'request failed' line with the Redis error", logs)
		}
	})
}

// Bad input is refused before Redis is called: with Redis down it is
// still a 4xx, never a 503, and it changes nothing when Redis is up.
func TestBadInputIsRefusedBeforeRedis(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "held", "svc-a", 30)
	ctx := context.Background()
	before, _ := h.Backend.RDB.HGetAll(ctx, lockKeyOf(h, "held")).Result()
	h.Backend.Mini.SetError("ERR injected outage")
	h.Do(t, http.MethodPost, "/locks/held", `{"owner":"svc-a","ttl_seconds":0}`).Fields(t, "ttl_seconds")
	h.Backend.Mini.SetError("")
	for _, req := range []struct{ method, target, body string }{
		{http.MethodPost, "/locks/held", `{"owner":"svc-a","ttl_seconds":0}`},
		{http.MethodPost, "/locks/held", `{"owner":"svc-a","ttl_seconds":300,"x":1}`},
		{http.MethodPost, "/locks/held/renew", `{"owner":"svc-a","ttl_seconds":300.5}`},
		{http.MethodDelete, "/locks/held?owner=svc-a&token=x", ""},
		{http.MethodDelete, "/locks/held?owner=svc-a&owner=svc-a", ""},
	} {
		res := h.Do(t, req.method, req.target, req.body)
		if res.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: got %d, want 422", req.method, req.target, res.StatusCode)
		}
	}
	after, _ := h.Backend.RDB.HGetAll(ctx, lockKeyOf(h, "held")).Result()
	b1, _ := json.Marshal(before)
	b2, _ := json.Marshal(after)
	if string(b1) != string(b2) {
		t.Errorf("got stored lease %s, want unchanged %s", b2, b1)
	}
	if got := h.status(t, "held"); got == nil || *got != held {
		t.Errorf("got %+v, want unchanged %+v", got, held)
	}
}

func lockKeyOf(h *harness, resource string) string {
	k, _ := h.Locker.Keys(resource)
	return k
}
