package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// TestLocksHeldFollowsTheLeases: on a real redis-server,
// leasegate_locks_held is the live leases at the last sweep of the lock
// index: acquires raise it, a release lowers it, and so does an expiry,
// which nothing announces. While Redis is down the number is unknown and
// left out of /metrics, never kept stale; it is back with the next sweep.
func TestLocksHeldFollowsTheLeases(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := server.DefaultConfig()
	cfg.RedisURL = srv.URL() + "?max_retries=-1"
	cfg.IndexSweepInterval = 20 * time.Millisecond
	s := gatewaytest.Start(t, cfg, nil)
	gatewaytest.Maintain(t, s)
	h := s.Handler()
	wantHeld := func(n float64, why string) {
		t.Helper()
		redistest.Eventually(t, 10*time.Second, fmt.Sprintf("leasegate_locks_held %v (%s)", n, why), func() bool {
			got, ok := metricOK(t, s, "leasegate_locks_held")
			return ok && got == n
		})
	}
	wantHeld(0, "no lease yet")

	// c's lease expires 5 s after its grant: the counts of 3 and 2 must
	// be seen before, at one sweep every 20 ms.
	for _, l := range []struct {
		resource string
		ttl      int
	}{{"a", 60}, {"b", 60}, {"c", 5}} {
		apptest.Do(t, h, http.MethodPost, "/locks/"+l.resource,
			fmt.Sprintf(`{"owner":"w","ttl_seconds":%d}`, l.ttl)).Want(t, http.StatusOK)
	}
	wantHeld(3, "three acquires")
	apptest.Do(t, h, http.MethodDelete, "/locks/a?owner=w", "").Want(t, http.StatusNoContent)
	wantHeld(2, "a released")
	wantHeld(1, "c expired")

	srv.Kill()
	redistest.Eventually(t, 10*time.Second, "leasegate_locks_held to be left out while Redis is down", func() bool {
		_, ok := metricOK(t, s, "leasegate_locks_held")
		return !ok
	})
	srv.Restart()
	wantHeld(0, "Redis back, empty (no persistence)")
}
