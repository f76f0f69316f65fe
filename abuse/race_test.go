package abuse

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// beforeZRem runs f once, just before the first command or pipeline that
// removes entries from a flag index (ZREM, or a script, on a key ending in
// ":flagged") is sent, so a test can put a concurrent request exactly in
// that gap.
type beforeZRem struct {
	armed atomic.Bool
	fired atomic.Bool
	f     func()
}

func (h *beforeZRem) trigger(cmds []redis.Cmder) {
	for _, c := range cmds {
		if !removesFromIndex(c) {
			continue
		}
		if h.armed.CompareAndSwap(true, false) {
			h.f()
			h.fired.Store(true)
			return
		}
	}
}

func removesFromIndex(c redis.Cmder) bool {
	switch c.Name() {
	case "zrem", "eval", "evalsha":
	default:
		return false
	}
	for _, a := range c.Args() {
		if k, ok := a.(string); ok && strings.HasSuffix(k, ":flagged") {
			return true
		}
	}
	return false
}

func (h *beforeZRem) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (h *beforeZRem) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trigger([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (h *beforeZRem) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trigger(cmds)
		return next(ctx, cmds)
	}
}

// listed reports whether List shows user on lock in tenant.
func listed(t *testing.T, svc *Service, tenant, lock, user string) bool {
	t.Helper()
	p, err := svc.List(context.Background(), tenant, leasegate.FlagQuery{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, f := range p.Items {
		if f.Lock == lock && f.UserID == user {
			return true
		}
	}
	return false
}

// A user flagged again while a listing prunes the user's stale index
// entry (its record expired or was cleared) must stay listed: the pruning
// may remove only the entry it saw, not the fresh one written meanwhile.
func TestListPruningNeverHidesAFreshFlag(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, _ := newService(t, b, policies(2))
		const tenant, lock, user = "t-prune-race", "login", "racer"
		flag := func() { flagUser(t, svc, tenant, lock, user, 2) }
		flag()
		// The record goes (as at the end of its retention); its index
		// entry stays until a listing prunes it.
		if err := b.RDB.Del(ctx, svc.keys.User(tenant, user).Flag(lock)).Err(); err != nil {
			t.Fatal(err)
		}
		b.Advance(t, 5*time.Millisecond)

		// A new window, flagged again, between the listing's read of the
		// records and its removal of the stale entry.
		hook := reflagBeforeZRem(t, b, svc, tenant, lock, user, flag)

		if listed(t, svc, tenant, lock, user) {
			t.Fatalf("got the stale entry listed, want it skipped")
		}
		if !hook.fired.Load() {
			t.Fatalf("the listing removed no index entry, want it to prune the stale one")
		}
		if _, err := svc.Get(ctx, tenant, user); err != nil {
			t.Fatalf("Get after flagging again: got %v, want the fresh flag", err)
		}
		if !listed(t, svc, tenant, lock, user) {
			t.Errorf("got %q not listed after it was flagged again, want it listed", user)
		}
	})
}

// A user flagged again between a clear's deletion of the records and its
// removal of their index entries must stay listed: the clear removes only
// the entries of the records it deleted.
func TestClearNeverHidesAFlagRecordedMeanwhile(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, _ := newService(t, b, policies(2))
		const tenant, lock, user = "t-clear-race", "login", "racer"
		flag := func() { flagUser(t, svc, tenant, lock, user, 2) }
		flag()
		b.Advance(t, 5*time.Millisecond)

		// A new window, flagged again, right after the clear deleted the
		// old record.
		hook := reflagBeforeZRem(t, b, svc, tenant, lock, user, flag)

		if err := svc.ClearFlags(ctx, tenant, user, leasegate.RequestMeta{Operator: "carol"}); err != nil {
			t.Fatalf("ClearFlags: %v", err)
		}
		if !hook.fired.Load() {
			t.Fatalf("the clear removed no index entry, want it to unindex the cleared flag")
		}
		uf, err := svc.Get(ctx, tenant, user)
		if err != nil || len(uf.Flags) != 1 {
			t.Fatalf("Get after flagging again: got %+v, %v, want the fresh flag", uf, err)
		}
		if !listed(t, svc, tenant, lock, user) {
			t.Errorf("got %q not listed after it was flagged again, want it listed", user)
		}
		p, err := svc.List(ctx, tenant, leasegate.FlagQuery{Lock: lock})
		if err != nil || len(p.Items) != 1 {
			t.Errorf("got %+v, %v in the lock's list, want the fresh flag", p, err)
		}
	})
}

// Lock names are the client's to choose, and each flagged one gets an
// index key of its own. Every key the abuse engine writes must expire:
// an index whose newest entry is older than the flag retention lists
// nothing, so it goes with its last flag record instead of staying in
// Redis for ever (one per name a client ever used).
func TestFlagIndexesExpireWithTheirFlags(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		pol := policies(1)
		pol.FlagRetention = time.Hour
		svc, _ := newService(t, b, pol)
		const tenant = "t-index-ttl"
		for _, lock := range []string{"name-1", "name-2", "name-3"} {
			if _, err := svc.Attempt(ctx, tenant, lock, "u", time.Second, leasegate.RequestMeta{}); err != nil {
				t.Fatal(err)
			}
		}
		keys := []string{svc.keys.FlagIndex(tenant, ""), svc.keys.FlagIndex(tenant, "name-1"), svc.keys.FlagIndex(tenant, "name-2"), svc.keys.FlagIndex(tenant, "name-3")}
		for _, k := range keys {
			ttl, err := b.RDB.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > pol.FlagRetention {
				t.Errorf("index %s: got TTL %v, want (0, %v]", k, ttl, pol.FlagRetention)
			}
		}
		if b.Mini == nil {
			return // an hour of real time is too long to wait; the TTL is Redis's to keep
		}
		b.Advance(t, pol.FlagRetention+time.Second)
		for _, k := range keys {
			if b.Mini.Exists(k) {
				t.Errorf("index %s: got it after the retention, want it expired with its flags", k)
			}
		}
	})
}

// reflagBeforeZRem arms a hook on b that, just before the next ZREM,
// clears user's lock and flags the user again (flag), and returns it.
func reflagBeforeZRem(t *testing.T, b *redistest.Backend, svc *Service, tenant, lock, user string, flag func()) *beforeZRem {
	t.Helper()
	hook := &beforeZRem{f: func() {
		if err := svc.Clear(context.Background(), tenant, lock, user); err != nil {
			t.Error(err)
		}
		flag()
	}}
	hook.armed.Store(true)
	b.RDB.AddHook(hook)
	return hook
}
