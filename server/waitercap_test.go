package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

// --max-waiters: with the cap reached, one more waiting acquire is
// answered at once with 503 unavailable and Retry-After, and a plain
// acquire still gets its answer. The cap is exported, for the alert.
func TestWaitingAcquiresBeyondMaxWaitersAreRefused(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.MaxWaiters = 1
	s := gatewaytest.Start(t, cfg, nil)
	base := gatewaytest.URL(s)

	apptest.Do(t, s.Handler(), http.MethodPost, "/locks/job", `{"owner":"holder","ttl_seconds":60}`).Want(t, http.StatusOK)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/locks/job", strings.NewReader(`{"owner":"w1","ttl_seconds":60,"wait_ms":25000}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	apptest.WaitFor(t, "one waiter in /metrics", func() bool {
		return strings.Contains(metricsText(t, base), "leasegate_lock_waiters 1")
	})
	if m := metricsText(t, base); !strings.Contains(m, "\nleasegate_max_waiters 1\n") {
		t.Errorf("/metrics lacks leasegate_max_waiters 1 (the configured cap)")
	}

	start := time.Now()
	a := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/job", `{"owner":"w2","ttl_seconds":60,"wait_ms":25000}`)
	p := a.Problem(t, http.StatusServiceUnavailable, "unavailable")
	a.HeaderIs(t, "Retry-After", "1")
	if !strings.Contains(p.Detail, "max-waiters") {
		t.Errorf("got detail %q, want it to name --max-waiters", p.Detail)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("answered after %v, want at once (not after the wait)", d)
	}
	apptest.Do(t, s.Handler(), http.MethodPost, "/locks/job", `{"owner":"w3","ttl_seconds":60}`).Want(t, http.StatusOK)
}
