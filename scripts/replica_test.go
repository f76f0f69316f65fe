package scripts_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/scripts"
)

// TestRefusalsFailOnAReplica: a read-only replica (a demoted primary a
// connection still reaches during a failover) answers no release, renewal
// or proclamation of a lock or election, no release or renewal of a
// semaphore permit, and no completion or abandonment of a claim with "not
// found" or "someone else's": each fails with
// READONLY, as their grants and writes do, because a refusal read from a
// replica may be untrue (docs/safety.md, "A refused election history
// under Sentinel failover"). On the primary the same refusals answer as
// before and leave no key behind.
func TestRefusalsFailOnAReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primarySrv, replicaSrv := redistest.StartReplicated(t)
	primary, replica := primarySrv.Client(t), replicaSrv.Client(t)

	// Someone else's lease, permit and pending claim, on both nodes: a
	// renewal, release, proclamation, completion or abandonment by "me" is
	// refused with -1, and of a name with nothing there with 0.
	if err := primary.HSet(ctx, "held", "owner", "other", "token", "7", "acquired_at", "1", "expires_at", "99999999999999").Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.ZAdd(ctx, "permits", redis.Z{Score: 99999999999999, Member: "other"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.HSet(ctx, "holders", "other", "7:1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.Set(ctx, "limit1", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.HSet(ctx, "claimed", "state", "pending", "owner", "other", "token", "7", "claimed_at", "1", "expires_at", "99999999999999").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the lease, the permit and the claim replicated", func() bool {
		return replica.Exists(ctx, "held", "permits", "holders", "limit1", "claimed").Val() == 5
	})
	// keys names the keys a call reads: the ones above, or ones that do
	// not exist.
	keys := func(held bool, names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			if held {
				out[i] = n
			} else {
				out[i] = "missing-" + n
			}
		}
		return out
	}
	calls := []struct {
		name string
		run  func(rdb *redis.Client, held bool) *redis.Cmd
	}{
		{"release", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.Release.Run(ctx, rdb, keys(held, "held", "held:w"), "me", "", "", "r")
		}},
		{"renew", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.Renew.Run(ctx, rdb, keys(held, "held"), "me", 1000, 1000, "")
		}},
		{"proclaim", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.Proclaim.Run(ctx, rdb, keys(held, "held", "held:w"), "me", "7", "v", "")
		}},
		{"semaphore release", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.SemRelease.Run(ctx, rdb, keys(held, "permits", "holders"), "me", "", "", "")
		}},
		{"semaphore renew", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.SemRenew.Run(ctx, rdb, keys(held, "permits", "holders", "limit", "fence"), "me", 1000, 1000)
		}},
		{"claim completion", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.ClaimComplete.Run(ctx, rdb, keys(held, "claimed"), "me", "7", "true", 1000, "0")
		}},
		{"claim abandonment", func(rdb *redis.Client, held bool) *redis.Cmd {
			return scripts.ClaimAbandon.Run(ctx, rdb, keys(held, "claimed"), "me", "7")
		}},
	}
	// Taking what another holds is refused too: a lease, a lock set, a
	// permit of a full semaphore (or one asked with another limit) and a
	// pending claim. Of a name with nothing there these calls grant, a
	// write a replica refuses anyway, so only the held case is a refusal.
	heldOnly := []struct {
		name string
		run  func(rdb *redis.Client, held bool) *redis.Cmd
	}{
		{"acquire", func(rdb *redis.Client, _ bool) *redis.Cmd {
			return scripts.Acquire.Run(ctx, rdb, []string{"held", "held:w", "held:q"}, "me", 1000, 1000, 0, "r", 0)
		}},
		{"lock set acquire", func(rdb *redis.Client, _ bool) *redis.Cmd {
			return scripts.AcquireSet.Run(ctx, rdb, []string{"held", "held:w", "held:q"}, "me", 1000, 1000, 0, 0, "0", "r")
		}},
		{"semaphore acquire (full)", func(rdb *redis.Client, _ bool) *redis.Cmd {
			return scripts.SemAcquire.Run(ctx, rdb, []string{"permits", "holders", "limit", "fence", "sem:w", "sem:q"}, "me", 1000, 1, 1000, 0)
		}},
		{"semaphore acquire (another limit)", func(rdb *redis.Client, _ bool) *redis.Cmd {
			return scripts.SemAcquire.Run(ctx, rdb, []string{"permits", "holders", "limit1", "fence", "sem:w", "sem:q"}, "me", 1000, 2, 1000, 0)
		}},
		{"claim", func(rdb *redis.Client, _ bool) *redis.Cmd {
			return scripts.Claim.Run(ctx, rdb, []string{"claimed"}, "me", 1000, 1000, "0")
		}},
	}
	for _, c := range calls {
		for _, held := range []bool{false, true} {
			checkRefusal(t, c.name, held, func(rdb *redis.Client) *redis.Cmd { return c.run(rdb, held) }, primary, replica)
		}
	}
	for _, c := range heldOnly {
		checkRefusal(t, c.name, true, func(rdb *redis.Client) *redis.Cmd { return c.run(rdb, true) }, primary, replica)
	}
	if got := primary.Keys(ctx, "missing-*").Val(); len(got) != 0 {
		t.Errorf("the refusals created %q on the primary", got)
	}
	for _, key := range []string{"held", "claimed"} {
		if f := primary.HExists(ctx, key, "primary_check").Val(); f {
			t.Errorf("the refusals left a field on %q", key)
		}
	}
	if n := primary.ZCard(ctx, "permits").Val(); n != 1 {
		t.Errorf("the refusals left %d permits, want the 1 there was", n)
	}
}

// checkRefusal runs call on the replica, where it must fail with
// READONLY, and on the primary, where it must answer a refusal: a first
// reply element (or an acquire's first word) of 0 or -1.
func checkRefusal(t *testing.T, name string, held bool, call func(*redis.Client) *redis.Cmd, primary, replica *redis.Client) {
	t.Helper()
	if err := call(replica).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("%s (held by another: %v) on the replica: got %v, want a READONLY error", name, held, err)
	}
	v, err := call(primary).Result()
	first := v
	if reply, ok := v.([]any); ok && len(reply) > 0 {
		first = reply[0]
	}
	if s, ok := first.(string); ok {
		n, perr := strconv.ParseInt(strings.Fields(s + " x")[0], 10, 64)
		if perr == nil {
			first = n
		}
	}
	if n, ok := first.(int64); err != nil || !ok || n > 0 {
		t.Errorf("%s (held by another: %v) on the primary: got %v, %v; want a refusal (0 or -1)", name, held, v, err)
	}
}

// TestDoneAnswersWriteWhenTheGatewayWaits: with the gateway waiting for
// replicas (the last argument '1'), a claim of a done key and a replayed
// completion write (the claim's state, rewritten), so the WAIT after them
// covers the completion they read on Redis 7.2 and later, whose WAIT
// counts the connection's own writes only (docs/claims.md). The write
// shows on any version: it moves the primary's replication offset, and a
// replica refuses the claim. Without it ('0') a claim of a done key stays
// a read, which a replica answers.
func TestDoneAnswersWriteWhenTheGatewayWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primarySrv, replicaSrv := redistest.StartReplicated(t)
	primary, replica := primarySrv.Client(t), replicaSrv.Client(t)
	if err := primary.HSet(ctx, "done", "state", "done", "owner", "a", "token", "7", "completed_at", "1", "result", `"r"`).Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the done claim replicated", func() bool {
		return replica.Exists(ctx, "done").Val() == 1
	})
	offset := func() string {
		info := primary.Info(ctx, "replication").Val()
		_, rest, _ := strings.Cut(info, "master_repl_offset:")
		return strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])
	}
	done := func(what string, cmd *redis.Cmd) {
		t.Helper()
		reply, err := cmd.Slice()
		if err != nil || len(reply) != 4 || reply[1] != "7" || reply[3] != `"r"` {
			t.Errorf("%s: got %v, %v; want the done state", what, reply, err)
		}
	}
	claim := func(rdb *redis.Client, waits string) *redis.Cmd {
		return scripts.Claim.Run(ctx, rdb, []string{"done"}, "b", 1000, 1000, waits)
	}
	replay := func(rdb *redis.Client, waits string) *redis.Cmd {
		return scripts.ClaimComplete.Run(ctx, rdb, []string{"done"}, "a", "7", `"r"`, 1000, waits)
	}
	for name, call := range map[string]func(*redis.Client, string) *redis.Cmd{"claim": claim, "replayed completion": replay} {
		before := offset()
		done(name+" on the primary, the gateway waiting", call(primary, "1"))
		if after := offset(); after == before {
			t.Errorf("%s, the gateway waiting: the replication offset stayed at %s, so it wrote nothing a WAIT could wait for", name, after)
		}
		done(name+" on the primary", call(primary, "0"))
	}
	if err := claim(replica, "1").Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Errorf("claim of a done key on the replica, the gateway waiting: got %v, want READONLY (a write)", err)
	}
	done("claim of a done key on the replica", claim(replica, "0"))
	if got := primary.HGetAll(ctx, "done").Val(); len(got) != 5 || got["state"] != "done" {
		t.Errorf("the done claim became %v", got)
	}
}
