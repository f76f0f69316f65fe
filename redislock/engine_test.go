package redislock_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// engine is one Redis backend the behavioural tests run against
// (redistest.Backend: the in-process miniredis, fast, with a clock the test
// moves, or a real redis-server, real Lua, real TIME), with how time
// passes on it.
type engine struct {
	*redistest.Backend
	name string
	// stale is the ttl of a lease whose key a test keeps (keepKey) past its
	// expiry: keepKey must run before Redis reaps it, so on a real server
	// it leaves room for a loaded machine.
	stale time.Duration
}

// epoch is the miniredis clock's starting point: a fixed instant, so
// tokens and timestamps are reproducible.
var epoch = redistest.Epoch

// newMiniEngine starts a miniredis whose clock starts at epoch and moves
// only when the test says so (SetTime for TIME, FastForward for TTLs).
func newMiniEngine(t *testing.T) *engine {
	t.Helper()
	return &engine{Backend: redistest.OnMini(t), name: "miniredis", stale: 50 * time.Millisecond}
}

// newRealEngine starts a redis-server on a free port. Time passes for
// real: Advance polls the server's TIME until d has gone by.
func newRealEngine(t *testing.T, args ...string) *engine {
	t.Helper()
	return &engine{Backend: redistest.OnRedis(t, args...), name: "redis-server", stale: 500 * time.Millisecond}
}

// engines returns every backend; each test runs its behaviour on all.
func engines(t *testing.T) []*engine {
	t.Helper()
	return []*engine{newMiniEngine(t), newRealEngine(t)}
}

// forEachEngine runs fn as a subtest per engine.
func forEachEngine(t *testing.T, fn func(t *testing.T, e *engine)) {
	t.Helper()
	for _, e := range engines(t) {
		t.Run("on "+e.name, func(t *testing.T) { fn(t, e) })
	}
}

func redisNow(t *testing.T, rdb *redis.Client) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

var prefixSeq atomic.Int64

// locker is a tenant's view of a Locker with the lock operations of its
// Service (the engine's one API) as the tests call them: resource first,
// the tenant from Tenant. Locker is what the Operator, the Waiter and
// Service take.
type locker struct {
	*redislock.Locker
	svc    *redislock.Service
	tenant string
}

// wrap serves l's locks through a Service without a subscription.
func wrap(l *redislock.Locker) *locker {
	return &locker{Locker: l, svc: redislock.NewService(l, nil)}
}

// Tenant is l in tenant's namespace.
func (l *locker) Tenant(tenant string) *locker {
	return &locker{Locker: l.Locker.Tenant(tenant), svc: l.svc, tenant: tenant}
}

func (l *locker) Acquire(ctx context.Context, resource, owner string, ttl time.Duration) (leasegate.AcquireResult, error) {
	return l.svc.Acquire(ctx, l.tenant, leasegate.AcquireRequest{Resource: resource, Owner: owner, TTL: ttl})
}

func (l *locker) Status(ctx context.Context, resource string) (leasegate.Lock, error) {
	return l.svc.Status(ctx, l.tenant, resource)
}

func (l *locker) Renew(ctx context.Context, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	return l.svc.Renew(ctx, l.tenant, resource, owner, token, ttl)
}

func (l *locker) Release(ctx context.Context, resource, owner string, token int64) (leasegate.ReleaseResult, error) {
	return l.svc.Release(ctx, l.tenant, resource, owner, token)
}

// newLocker returns a locker on rdb whose keys are unique to this test.
func newLocker(t *testing.T, rdb redis.Scripter, opts redislock.Config) *locker {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = uniquePrefix(t)
	}
	return wrap(redislock.New(rdb, opts))
}

func uniquePrefix(t *testing.T) string {
	t.Helper()
	name := strings.NewReplacer("{", "(", "}", ")", " ", "_").Replace(t.Name())
	return fmt.Sprintf("test%d:%s:", prefixSeq.Add(1), name)
}

func mustAcquire(t *testing.T, l *locker, resource, owner string, ttl time.Duration) leasegate.Lock {
	t.Helper()
	res, err := l.Acquire(context.Background(), resource, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", resource, owner, err)
	}
	if !res.Acquired {
		t.Fatalf("Acquire(%q, %q): got not acquired (held by %q), want acquired", resource, owner, res.Lock.Owner)
	}
	return res.Lock
}

func mustRelease(t *testing.T, l *locker, resource, owner string) {
	t.Helper()
	got, err := l.Release(context.Background(), resource, owner, 0)
	if err != nil {
		t.Fatalf("Release(%q, %q): %v", resource, owner, err)
	}
	if got != leasegate.Released {
		t.Fatalf("Release(%q, %q): got %v, want %v", resource, owner, got, leasegate.Released)
	}
}
