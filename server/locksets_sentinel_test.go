package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/server"
)

// TestLockSetsOnSentinel: under Sentinel (a plain client to the master,
// as on a single Redis) a lock set is one script, and with
// --min-replicas its grant waits for the replica like a single lock's.
func TestLockSetsOnSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := sentinelClient(t)
	l := redislock.NewService(redislock.New(rdb, redislock.Config{Prefix: "sets:", MinReplicas: 1, ReplicaTimeout: time.Second}), nil)

	got, err := l.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: []string{"a", "b", "c"}, Owner: "svc-a", TTL: time.Minute})
	if err != nil || !got.Acquired || len(got.Locks) != 3 {
		t.Fatalf("AcquireSet: got %+v, %v; want three leases acknowledged by the replica", got, err)
	}
	refused, err := l.AcquireSet(ctx, "", leasegate.LockSetRequest{Resources: []string{"d", "c"}, Owner: "svc-b", TTL: time.Minute})
	if err != nil || refused.Acquired || len(refused.Held) != 1 || refused.Held[0].Resource != "c" {
		t.Fatalf("overlapping set: got %+v, %v; want refused by c", refused, err)
	}
	if _, err := l.Status(ctx, "", "d"); err == nil {
		t.Errorf("d is held after a refused set, want free")
	}
	rel, err := l.ReleaseSet(ctx, "", "svc-a", []string{"a", "b", "c"})
	if err != nil || len(rel.Released) != 3 {
		t.Errorf("ReleaseSet: got %+v, %v; want all three released", rel, err)
	}
}

// sentinelClient is the gateway's Redis client (redisconn.NewClient) to
// the master of a fresh Sentinel setup.
func sentinelClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	sn := redistest.StartSentinel(t)
	cfg := server.DefaultConfig()
	cfg.Redis.SentinelMaster = sn.MasterName
	cfg.Redis.SentinelAddrs = sn.Addrs()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	rdb, err := redisconn.NewClient(cfg.RedisOptions())
	if err != nil {
		t.Fatalf("NewRedisClient: %v", err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}
