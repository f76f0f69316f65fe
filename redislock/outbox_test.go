package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/webhook"
)

// commandLog records the names of the commands a client sends.
type commandLog struct {
	mu    sync.Mutex
	names []string
}

func (c *commandLog) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		c.names = append(c.names, cmd.Name())
	}
}

// take returns the names recorded so far and forgets them.
func (c *commandLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.names
	c.names = nil
	return out
}

func (c *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds...)
		return next(ctx, cmds)
	}
}

// outboxEvents reads the whole outbox of prefix.
func outboxEvents(t *testing.T, rdb redis.Cmdable, prefix string) []redis.XMessage {
	t.Helper()
	xs, err := rdb.XRange(context.Background(), keyspace.Space{Prefix: prefix}.Outbox(), "-", "+").Result()
	if err != nil {
		t.Fatalf("XRANGE outbox: %v", err)
	}
	return xs
}

// checkForceReleaseEvent checks that x is the force-release event of lk,
// released in tenant by oncall, as the deliverer reads it.
func checkForceReleaseEvent(t *testing.T, x redis.XMessage, tenant string, lk leasegate.Lock, latest time.Time) {
	t.Helper()
	ev := webhook.EventOf(x)
	want := webhook.Event{ID: ev.ID, Type: "force-release", At: ev.At, Tenant: tenant,
		Resource: lk.Resource, Actor: "oncall", Reason: "worker-1 is wedged"}
	if !reflect.DeepEqual(ev, want) {
		t.Errorf("got event %+v, want %+v", ev, want)
	}
	if id, _ := x.Values["id"].(string); len(id) != 32 {
		t.Errorf("got id %q, want 32 hex digits", id)
	}
	at, err := strconv.ParseInt(fmt.Sprint(x.Values["at"]), 10, 64)
	if err != nil || at < lk.AcquiredAt.UnixMilli() || at > latest.UnixMilli() {
		t.Errorf("got at %v (%v), want Redis's time of the release, between %v and %v", x.Values["at"], err, lk.AcquiredAt, latest)
	}
	if len(x.Values) != 7 {
		t.Errorf("got fields %v, want id, type, tenant, resource, at, actor, reason", x.Values)
	}
}

// With webhooks on, a forced release is one force-release event in the
// outbox, written by the force_release script itself (no XADD leaves the
// gateway), with the lock index in the script too; a release of
// nothing writes nothing, and without webhooks nothing is written.
func TestForceReleaseWritesItsWebhookEventInItsScript(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		cmds := &commandLog{}
		e.RDB.AddHook(cmds)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix})
		o := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{Outbox: true})
		meta := leasegate.RequestMeta{Operator: "oncall", RequestID: "req-1"}

		lk := mustAcquire(t, l.Tenant("shop"), "stuck", "worker-1", ttl)
		cmds.take()
		got, err := o.ForceRelease(ctx, "shop", "stuck", "worker-1 is wedged", meta)
		if err != nil || got.Token != lk.Token {
			t.Fatalf("ForceRelease: got %+v, %v; want worker-1's lease", got, err)
		}
		for _, name := range cmds.take() {
			if name != "evalsha" && name != "eval" {
				t.Errorf("ForceRelease sent %s besides its script; want the script alone", name)
			}
		}
		xs := outboxEvents(t, e.RDB, prefix)
		if len(xs) != 1 {
			t.Fatalf("got %d outbox entries %v, want 1", len(xs), xs)
		}
		checkForceReleaseEvent(t, xs[0], "shop", lk, redisNow(t, e.RDB))

		if _, err := o.ForceRelease(ctx, "shop", "stuck", "again", meta); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("released twice: got %v, want ErrLockNotHeld", err)
		}
		if _, err := o.ForceRelease(ctx, "shop", "free", "nothing", meta); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("nothing held: got %v, want ErrLockNotHeld", err)
		}
		if xs := outboxEvents(t, e.RDB, prefix); len(xs) != 1 {
			t.Errorf("got %d outbox entries after releases of nothing, want still 1", len(xs))
		}

		off := redislock.NewOperator(e.RDB, l.Locker, nil, redislock.OperatorOptions{})
		mustAcquire(t, l.Tenant("shop"), "quiet", "worker-1", ttl)
		if _, err := off.ForceRelease(ctx, "shop", "quiet", "no hooks", meta); err != nil {
			t.Fatal(err)
		}
		if xs := outboxEvents(t, e.RDB, prefix); len(xs) != 1 {
			t.Errorf("got %d outbox entries after a release without webhooks, want still 1", len(xs))
		}
	})
}

// On Redis Cluster the outbox is in another slot than any lock: the
// script runs without it (no CROSSSLOT error) and the event is added
// right after it, one per forced release, for resources on every master.
func TestForceReleaseEventOnRealCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	prefix := uniquePrefix(t)
	l := wrap(redislock.New(rc, redislock.Config{Prefix: prefix}))
	failed := 0
	o := redislock.NewOperator(rc, l.Locker, nil, redislock.OperatorOptions{Outbox: true, OutboxFailed: func() { failed++ }})
	meta := leasegate.RequestMeta{Operator: "oncall"}
	names := clusterNames("fr")
	masters := map[string]bool{}
	held := map[string]leasegate.Lock{}
	for _, res := range names {
		lk := mustAcquire(t, l.Tenant("shop"), res, "worker-1", time.Minute)
		held[res] = lk
		lock, _ := l.Tenant("shop").Keys(res)
		masters[masterOf(t, rc, lock)] = true
		if _, err := o.ForceRelease(ctx, "shop", res, "worker-1 is wedged", meta); err != nil {
			t.Fatalf("ForceRelease(%q): %v", res, err)
		}
	}
	if _, err := o.ForceRelease(ctx, "shop", "free", "nothing", meta); !errors.Is(err, leasegate.ErrLockNotHeld) {
		t.Errorf("nothing held: got %v, want ErrLockNotHeld", err)
	}
	if len(masters) != 3 {
		t.Errorf("resources on %d masters, want 3", len(masters))
	}
	now, err := rc.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	xs := outboxEvents(t, rc, prefix)
	if len(xs) != len(names) || failed != 0 {
		t.Fatalf("got %d outbox entries (%d failed), want %d", len(xs), failed, len(names))
	}
	for i, x := range xs {
		checkForceReleaseEvent(t, x, "shop", held[names[i]], now)
	}
}
