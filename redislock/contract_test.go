package redislock_test

import (
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/redislock"
)

// The lock engine as the domain's LockService keeps the contract that the
// Go client keeps over HTTP (client/contract_test.go), on miniredis and
// on a real redis-server.
func TestServiceKeepsTheLockContract(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		contracttest.Locks(t, func(t *testing.T) contracttest.LockBackend {
			t.Helper()
			prefix := uniquePrefix(t)
			l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
			w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
			t.Cleanup(w.Close)
			b := contracttest.LockBackend{Locks: redislock.NewService(l.Locker, w), Advance: func(t *testing.T, d time.Duration) { e.Advance(t, d) }}
			if e.Mini != nil {
				b.Outage = func(t *testing.T) {
					e.Mini.SetError("LOADING redis is loading")
					t.Cleanup(func() { e.Mini.SetError("") })
				}
			}
			return b
		})
	})
}

// The operator side (listing, forced releases, events) keeps the contract
// the Go client keeps over HTTP.
func TestOperatorKeepsTheOperatorContract(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		if e.Mini != nil {
			e.RealClock() // watchers' timers follow real time
		}
		contracttest.Operator(t, func(t *testing.T) contracttest.OperatorBackend {
			t.Helper()
			prefix := uniquePrefix(t)
			l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
			w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
			t.Cleanup(w.Close)
			o := redislock.NewOperator(e.RDB, l.Locker, w, redislock.OperatorOptions{WatchPoll: 20 * time.Millisecond})
			return contracttest.OperatorBackend{Locks: redislock.NewService(l.Locker, w), Ops: o}
		})
	})
}

// The lock engine's lock sets keep the contract the Go client keeps over
// HTTP, in one script and one member at a time (as on Redis Cluster).
func TestServiceKeepsTheLockSetContract(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		for _, m := range setModes {
			t.Run(m.name, func(t *testing.T) {
				contracttest.LockSets(t, func(t *testing.T) contracttest.LockSetBackend {
					t.Helper()
					prefix := uniquePrefix(t)
					l := m.wrap(redislock.New(e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"}))
					w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
					t.Cleanup(w.Close)
					svc := redislock.NewService(l, w)
					b := contracttest.LockSetBackend{Sets: svc, Locks: svc, Advance: func(t *testing.T, d time.Duration) { e.Advance(t, d) }}
					if e.Mini != nil {
						b.Outage = func(t *testing.T) {
							e.Mini.SetError("LOADING redis is loading")
							t.Cleanup(func() { e.Mini.SetError("") })
						}
					}
					return b
				})
			})
		}
	})
}
