package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// TestAGatewayStartsWhenRedisIsUnreachable: the gateway starts without
// its Redis, says so once and plainly (naming the address), keeps /readyz
// at 503 until Redis is there, and does not repeat the release
// subscription's failure in a tight loop meanwhile.
func TestAGatewayStartsWhenRedisIsUnreachable(t *testing.T) {
	t.Parallel()
	addr := redistest.DeadAddr(t) // nothing serves
	log, lb := capture(t)
	s, err := startOn(t, "redis://"+addr, log, func(c *server.Config) { c.HTTP.RequestTimeout = 300 * time.Millisecond })
	if err != nil {
		t.Fatalf("server.New without Redis: got %v, want it to start", err)
	}

	var said []map[string]any
	for _, r := range lb.Records(t) {
		if msg, _ := r["msg"].(string); strings.Contains(msg, "not reachable") {
			said = append(said, r)
		}
	}
	if len(said) != 1 {
		t.Fatalf("got %d records saying Redis is not reachable, want 1: %v", len(said), lb.Records(t))
	}
	if msg := said[0]["msg"].(string); !strings.Contains(msg, addr) || said[0]["level"] != "error" {
		t.Errorf("got %v, want an error naming %s in its message", said[0], addr)
	}

	// Time must pass to show that nothing repeats: about 1.5 s, in which
	// the release subscription used to fail and log four or five times.
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusServiceUnavailable {
			t.Fatalf("GET /readyz without Redis: got %d, want 503", code)
		}
	}
	if got := warnings(t, lb, "subscription"); len(got) > 1 {
		t.Errorf("got %d subscription warnings in 1.5 s, want at most 1: %v", len(got), got)
	}
}
