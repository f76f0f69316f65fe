package contracttest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
)

// Store is one Redis a suite runs on: miniredis (frozen clock, outages)
// or a real redis-server (its own clock; gopher-lua is not Redis's Lua).
type Store struct {
	RDB     *redis.Client
	Advance Clock
	// Outage makes every later call fail (miniredis only; nil otherwise).
	Outage func(t *testing.T)
	// Mini is the miniredis, nil on a real server.
	Mini *miniredis.Miniredis
}

// ForEachStore runs fn as a subtest on each of redistest's backends (see
// redistest.EachBackend): a fresh miniredis whose clock is frozen at the
// current time, to the millisecond, so that a gateway's own timers agree
// with it, and a real redis-server on a free port (redistest.Start says
// when a missing binary skips).
func ForEachStore(t *testing.T, fn func(t *testing.T, s Store)) {
	t.Helper()
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		s := Store{RDB: b.RDB, Mini: b.Mini, Advance: func(t *testing.T, d time.Duration) { b.Advance(t, d) }}
		if b.Mini != nil {
			s.Advance = FrozenMiniredis(b)
			s.Outage = func(t *testing.T) {
				b.Mini.SetError("LOADING redis is loading")
				t.Cleanup(func() { b.Mini.SetError("") })
			}
		}
		fn(t, s)
	})
}

var prefixes atomic.Int64

// Prefix is a key prefix no other caller in this process gets.
func Prefix() string { return fmt.Sprintf("t%d:", prefixes.Add(1)) }
