package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/server"
)

// The server wires semaphores and claims: their routes answer, their
// metrics count, and a forced claim removal lands in the abuse log with
// the operator and the reason.
func TestServerWiresSemaphoresAndClaims(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	audit := &logtest.Buffer{}
	cfg.AbuseLog = audit
	s := gatewaytest.Start(t, cfg, nil)
	base := gatewaytest.URL(s)
	c := client.New(base)
	ctx := context.Background()

	p, err := c.AcquirePermit(ctx, "provider", 1, 30*time.Second)
	if err != nil {
		t.Fatalf("AcquirePermit: %v", err)
	}
	if _, err := c.AcquirePermit(ctx, "provider", 1, 30*time.Second); err == nil {
		t.Fatal("a second permit of limit 1: got one, want full")
	}
	// A waiting acquire is woken by the release (the server's Waiter and
	// release channel serve semaphores too).
	got := make(chan error, 1)
	go func() {
		_, err := c.AcquirePermit(ctx, "provider", 1, 30*time.Second, client.WithWait(20*time.Second))
		got <- err
	}()
	if err := c.ReleasePermit(ctx, p); err != nil {
		t.Fatalf("ReleasePermit: %v", err)
	}
	if err := <-got; err != nil {
		t.Errorf("waiting acquire after the release: %v", err)
	}

	for range 2 {
		if _, err := c.Once(ctx, "reward", "order-1", func(context.Context) (json.RawMessage, error) {
			return json.RawMessage(`"paid"`), nil
		}); err != nil {
			t.Fatalf("Once: %v", err)
		}
	}
	if err := c.RemoveClaim(ctx, "reward", "order-1", "refund issued by hand"); err != nil {
		t.Fatalf("RemoveClaim: %v", err)
	}
	if got := audit.String(); !strings.Contains(got, `"event":"claim_removed"`) || !strings.Contains(got, `"operator":"open"`) ||
		!strings.Contains(got, `"reason":"refund issued by hand"`) {
		t.Errorf("abuse log: got %s, want a claim_removed record naming the operator and the reason", got)
	}

	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		// The waiting acquire counts as waited, or as acquired when the
		// release came first: either way acquired is there.
		`leasegate_semaphore_acquires_total{outcome="acquired"}`,
		`leasegate_semaphore_acquires_total{outcome="contended"} 1`,
		`leasegate_semaphore_releases_total{result="released"} 1`,
		`leasegate_claims_total{event="started"} 1`,
		`leasegate_claims_total{event="completed"} 1`,
		`leasegate_claims_total{event="replayed"} 1`,
		`leasegate_claims_total{event="removed"} 1`,
		`leasegate_redis_duration_seconds_count{op="sem_acquire"}`,
		`leasegate_redis_duration_seconds_count{op="claim_complete"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
