package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/server"
)

// TestAClusterFailoverServesThePromotedMastersSlots: Redis Cluster of
// three masters with a replica each, one master killed with kill -9.
// Once its replica says ROLE master and the cluster says ok, the dead
// master's slots are served by the promoted replica (its locks still
// held), without waiting for the dead master to come back; the other
// masters' slots serve throughout; a log line says which slots changed
// master; the dead master leaves leasegate_redis_up and the promoted one
// is up, with no replica left (leasegate_redis_replicas).
func TestAClusterFailoverServesThePromotedMastersSlots(t *testing.T) {
	t.Parallel()
	cl := redistest.StartFailoverCluster(t, time.Second)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.ClusterAddrs = cl.Addrs()
	log, lb := capture(t)
	s, err := server.New(cfg, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	h := s.Handler()
	cc := cl.Client(t)

	ctx := context.Background()
	dead, promoted := cl.Nodes[0], cl.Replicas[0]
	var onDead, elsewhere []string
	for i := 0; len(onDead) < 5 || len(elsewhere) < 5; i++ {
		res := fmt.Sprintf("r-%d", i)
		if lockOn(t, h, cc, cfg.KeyPrefix, res) == dead.Addr() {
			onDead = append(onDead, res)
		} else {
			elsewhere = append(elsewhere, res)
		}
	}
	// The grants are on the replica before the kill.
	if n, err := dead.Client(t).Wait(ctx, 1, 5000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on %s: %d, %v", dead, n, err)
	}
	get := func(res string) int { return apptest.Do(t, h, http.MethodGet, "/locks/"+res, "").StatusCode }

	killed := time.Now()
	dead.Kill()
	redistest.Eventually(t, 10*time.Second, "the dead master's slots answer 503", func() bool {
		return get(onDead[0]) == http.StatusServiceUnavailable
	})
	promotedAt := cl.WaitPromoted(t, promoted, 30*time.Second)
	t.Logf("%s promoted %v after the kill", promoted, promotedAt.Sub(killed))
	for _, res := range elsewhere {
		if code := get(res); code != http.StatusOK {
			t.Errorf("GET /locks/%s on a live master after the failover: got %d, want 200", res, code)
		}
	}
	// The bound only guards a hang: today's reload comes within 100 ms of
	// the cluster naming the replica; without it the slots waited for
	// the dead master, or for go-redis's reload a minute after its last.
	redistest.Eventually(t, 10*time.Second, "the promoted master serves the dead master's slots", func() bool {
		return get(onDead[0]) == http.StatusOK
	})
	t.Logf("served %v after ROLE said master", time.Since(promotedAt))
	for _, res := range onDead {
		if code := get(res); code != http.StatusOK {
			t.Errorf("GET /locks/%s (held by a on the dead master) after the failover: got %d, want 200", res, code)
		}
	}

	moved := warnings(t, lb, "redis cluster slots changed master")
	found := false
	for _, r := range moved {
		found = found || r["from"] == dead.Addr() && r["to"] == promoted.Addr()
	}
	if !found {
		t.Errorf("no log line says slots moved from %s to %s: %v", dead.Addr(), promoted.Addr(), moved)
	}
	if v, ok := metricOK(t, s, `leasegate_redis_up{node="`+dead.Addr()+`"}`); ok {
		t.Errorf("leasegate_redis_up of the dead, replaced master: got %v, want no series", v)
	}
	if got := metric(t, s, `leasegate_redis_up{node="`+promoted.Addr()+`"}`); got != 1 {
		t.Errorf("leasegate_redis_up of the promoted master: got %v, want 1", got)
	}
	if got := metric(t, s, `leasegate_redis_replicas{node="`+promoted.Addr()+`"}`); got != 0 {
		t.Errorf("leasegate_redis_replicas of the promoted master: got %v, want 0", got)
	}
	if got := metric(t, s, `leasegate_redis_topology_changes_total`); got < 1 {
		t.Errorf("leasegate_redis_topology_changes_total: got %v, want at least 1", got)
	}
}

// lockOn takes the lock on res as owner a for two minutes, and returns
// the address of the master its key lives on.
func lockOn(t *testing.T, h http.Handler, cc *redis.ClusterClient, prefix, res string) string {
	t.Helper()
	if code := apptest.Do(t, h, http.MethodPost, "/locks/"+res, `{"owner":"a","ttl_seconds":120}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/%s: got %d, want 200", res, code)
	}
	lock, _, _ := keyspace.Space{Prefix: prefix}.LockKeys("", res)
	m, err := cc.MasterForKey(context.Background(), lock)
	if err != nil {
		t.Fatalf("MasterForKey(%s): %v", lock, err)
	}
	return m.Options().Addr
}
