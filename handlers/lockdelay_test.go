package handlers_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestLockDelayRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)

	t.Run("after an expiry another owner is answered contended until the delay ends", func(t *testing.T) {
		var got acquireJSON
		h.Do(t, http.MethodPost, "/locks/d", `{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":5000}`).JSON(t, http.StatusOK, &got)
		if !got.Acquired {
			t.Fatalf("got %+v, want acquired", got)
		}
		h.Backend.Advance(t, 11*time.Second)
		got = acquireJSON{}
		h.Do(t, http.MethodPost, "/locks/d", `{"owner":"svc-b","ttl_seconds":10}`).JSON(t, http.StatusOK, &got)
		if got.Acquired || got.Resource != "d" || got.RetryAfterMS == nil || *got.RetryAfterMS != 4000 {
			t.Errorf("got %+v, want acquired false, resource d, retry_after_ms 4000", got)
		}
		if n := testutil.ToFloat64(h.Metrics.LockDelayRefusals.WithLabelValues("lock")); n != 1 {
			t.Errorf("got %v lock delay refusals counted, want 1", n)
		}
		h.Backend.Advance(t, 4*time.Second)
		got = acquireJSON{}
		h.Do(t, http.MethodPost, "/locks/d", `{"owner":"svc-b","ttl_seconds":10}`).JSON(t, http.StatusOK, &got)
		if !got.Acquired {
			t.Errorf("got %+v, want acquired once the delay is over", got)
		}
	})

	t.Run("a release ends the lease with no delay", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":60000}`).Want(t, http.StatusOK)
		h.Do(t, http.MethodDelete, "/locks/r?owner=svc-a", "").Want(t, http.StatusNoContent)
		h.acquire(t, "r", "svc-b", 10)
	})

	t.Run("lock_delay_ms out of range or not an integer is a 422 that changes nothing", func(t *testing.T) {
		for _, body := range []string{
			`{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":-1}`,
			`{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":60001}`,
			`{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":1.5}`,
			`{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":"100"}`,
			`{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":null}`,
		} {
			h.Do(t, http.MethodPost, "/locks/v", body).Fields(t, "lock_delay_ms")
		}
		if lk := h.status(t, "v"); lk != nil {
			t.Errorf("got lock %+v, want none", lk)
		}
	})
}

func TestDefaultLockDelay(t *testing.T) {
	t.Parallel()
	cfg := handlers.DefaultConfig()
	cfg.DefaultLockDelay = 2 * time.Second
	h := &harness{apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "lg:", Config: &cfg})}

	h.acquire(t, "def", "svc-a", 10)
	h.Do(t, http.MethodPost, "/locks/zero", `{"owner":"svc-a","ttl_seconds":10,"lock_delay_ms":0}`).Want(t, http.StatusOK)
	h.Backend.Advance(t, 10*time.Second+500*time.Millisecond)
	var got acquireJSON
	h.Do(t, http.MethodPost, "/locks/def", `{"owner":"svc-b","ttl_seconds":10}`).JSON(t, http.StatusOK, &got)
	if got.Acquired || got.RetryAfterMS == nil || *got.RetryAfterMS != 1500 {
		t.Errorf("without lock_delay_ms: got %+v, want the default delay's refusal, retry_after_ms 1500", got)
	}
	h.acquire(t, "zero", "svc-b", 10) // lock_delay_ms 0 overrides the default
}
