package redistest

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// A Backend is the Redis a test runs on, either kind behind one type:
// OnMini (miniredis, a clock the test moves) or OnRedis (a redis-server
// process from Start). It lives here, below every package of the
// project, so that any package's own tests can use it (abuse's internal
// tests included); internal/apptest builds the gateway on it.

// Epoch is where a miniredis clock starts, so timestamps are exact.
var Epoch = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// Backend is the Redis a test runs on.
type Backend struct {
	// Name reads as a sentence in t.Run: "on miniredis", "on redis-server".
	Name string
	RDB  *redis.Client
	// Mini is the miniredis, nil on a real redis-server (whose clock is
	// not the test's: Advance is unusable there).
	Mini *miniredis.Miniredis
	// Server is the redis-server process (Kill, Pause, Restart), nil on
	// miniredis.
	Server *Server
	mu     sync.Mutex
	now    time.Time
}

// OnMini starts a miniredis whose clock (TIME) reads Epoch until the test
// calls Advance or SetTime. The client never retries, so an outage
// (Mini.SetError, Mini.Close) is answered at once.
func OnMini(t testing.TB) *Backend {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(Epoch)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return &Backend{Name: "on miniredis", RDB: rdb, Mini: m, now: Epoch}
}

// OnRedis starts a real redis-server on a free port with args
// (Start: under CI=true a missing binary fails the test,
// elsewhere it skips).
func OnRedis(t testing.TB, args ...string) *Backend {
	t.Helper()
	srv := Start(t, args...)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 128})
	t.Cleanup(func() { _ = rdb.Close() })
	return &Backend{Name: "on redis-server", RDB: rdb, Server: srv}
}

// EachBackend runs test once on miniredis and once on a real
// redis-server, each as a subtest named after the backend: the same
// scripts, because gopher-lua is not Redis's Lua.
func EachBackend(t *testing.T, test func(t *testing.T, b *Backend)) {
	t.Helper()
	for _, c := range []struct {
		name  string
		start func(testing.TB) *Backend
	}{{"on miniredis", OnMini}, {"on redis-server", func(t testing.TB) *Backend { return OnRedis(t) }}} {
		t.Run(c.name, func(t *testing.T) { test(t, c.start(t)) })
	}
}

// Now is the miniredis clock.
func (b *Backend) Now() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.now
}

// Advance makes d pass on the server's clock: miniredis moves its clock
// (TIME) and its TTLs at once; on a real redis-server real time must
// pass, so Advance polls the server's TIME (never the test's clock) until
// d has gone by, failing after a generous bound that only guards a hang.
// Safe for concurrent use.
func (b *Backend) Advance(t testing.TB, d time.Duration) {
	t.Helper()
	if b.Mini != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.now = b.now.Add(d)
		b.Mini.SetTime(b.now)
		b.Mini.FastForward(d)
		return
	}
	target := b.serverTime(t).Add(d)
	poll(t, time.Now().Add(d+10*time.Second), 2*time.Millisecond, func() error {
		if b.serverTime(t).Before(target) {
			return fmt.Errorf("redis clock did not reach %v within %v", target, d+10*time.Second)
		}
		return nil
	})
}

func (b *Backend) serverTime(t testing.TB) time.Time {
	t.Helper()
	now, err := b.RDB.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now
}

// WithoutRetries gives b a client that answers a failed command at once
// (no retries), for tests of outages on a real redis-server (OnMini's
// client never retries). Call it before building anything on b.
func (b *Backend) WithoutRetries(t testing.TB) *Backend {
	t.Helper()
	opts := *b.RDB.Options()
	opts.MaxRetries = -1
	rdb := redis.NewClient(&opts)
	t.Cleanup(func() { _ = rdb.Close() })
	b.RDB = rdb
	return b
}

// RealClock lets the miniredis clock follow the machine's, for code that
// waits on real timers (a Waiter's expiry wake-up); Advance then no
// longer applies.
func (b *Backend) RealClock() { b.Mini.SetTime(time.Time{}) }

// SetTime sets the miniredis clock (TIME) without touching TTLs.
func (b *Backend) SetTime(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.now = now
	b.Mini.SetTime(now)
}

// Keys lists every key, sorted.
func (b *Backend) Keys(t testing.TB) []string {
	t.Helper()
	if b.Mini != nil {
		return b.Mini.Keys()
	}
	keys, err := b.RDB.Keys(context.Background(), "*").Result()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	sort.Strings(keys)
	return keys
}
