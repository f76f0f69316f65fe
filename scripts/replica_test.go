package scripts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/scripts"
)

// TestRefusalsFailOnAReplica: a read-only replica (a demoted primary a
// connection still reaches during a failover) answers no release, renewal
// or proclamation with "not found" or "someone else's": each fails with
// READONLY, as their grants and writes do, because a refusal read from a
// replica may be untrue (docs/safety.md, "A refused election history
// under Sentinel failover"). On the primary the same refusals answer as
// before and leave no key behind.
func TestRefusalsFailOnAReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := redistest.Start(t).Client(t)
	replicaSrv := redistest.Start(t)
	replica := replicaSrv.Client(t)
	host, port, _ := strings.Cut(primary.Options().Addr, ":")
	if err := replica.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the replica in sync", func() bool {
		info, err := replica.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})

	// A lease of someone else's, on both nodes: the renewal and the
	// release by "me" are refused with -1, the proclamation too.
	if err := primary.HSet(ctx, "held", "owner", "other", "token", "7", "acquired_at", "1", "expires_at", "99999999999999").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the lease replicated", func() bool {
		return replica.Exists(ctx, "held").Val() == 1
	})
	calls := []struct {
		name string
		run  func(rdb *redis.Client, key string) *redis.Cmd
	}{
		{"release", func(rdb *redis.Client, key string) *redis.Cmd {
			return scripts.Release.Run(ctx, rdb, []string{key, key + ":w"}, "me", "", "", "r")
		}},
		{"renew", func(rdb *redis.Client, key string) *redis.Cmd {
			return scripts.Renew.Run(ctx, rdb, []string{key}, "me", 1000, 1000, "")
		}},
		{"proclaim", func(rdb *redis.Client, key string) *redis.Cmd {
			return scripts.Proclaim.Run(ctx, rdb, []string{key, key + ":w"}, "me", "7", "v", "")
		}},
	}
	for _, c := range calls {
		for _, key := range []string{"missing", "held"} {
			if err := c.run(replica, key).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
				t.Errorf("%s of %q on the replica: got %v, want a READONLY error", c.name, key, err)
			}
			if err := c.run(primary, key).Err(); err != nil {
				t.Errorf("%s of %q on the primary: %v, want a refusal", c.name, key, err)
			}
		}
	}
	if n := primary.Exists(ctx, "missing").Val(); n != 0 {
		t.Errorf("the refusals created %q on the primary", "missing")
	}
	if f := primary.HExists(ctx, "held", "primary_check").Val(); f {
		t.Error("the refusals left a field on the lease")
	}
}
