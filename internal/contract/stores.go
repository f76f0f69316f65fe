package contract

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
)

// Store is one Redis a suite runs on: miniredis (frozen clock, outages)
// or a real redis-server (its own clock; gopher-lua is not Redis's Lua).
type Store struct {
	Name    string
	RDB     *redis.Client
	Advance Clock
	// Outage makes every later call fail (miniredis only; nil otherwise).
	Outage func(t *testing.T)
	// Mini is the miniredis, nil on a real server.
	Mini *miniredis.Miniredis
}

// ForEachStore runs fn as a subtest on a fresh miniredis and on a real
// redis-server (started on a free port; skipped when none is installed).
func ForEachStore(t *testing.T, fn func(t *testing.T, s Store)) {
	t.Helper()
	t.Run("on miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		fn(t, Store{Name: "miniredis", RDB: rdb, Advance: FrozenMiniredis(m), Mini: m,
			Outage: func(t *testing.T) {
				m.SetError("LOADING redis is loading")
				t.Cleanup(func() { m.SetError("") })
			}})
	})
	t.Run("on a real redis-server", func(t *testing.T) {
		rs := redistest.Start(t)
		rdb := rs.Client(t)
		fn(t, Store{Name: "redis-server", RDB: rdb, Advance: RedisTime(rdb)})
	})
}

var prefixes atomic.Int64

// Prefix is a key prefix no other caller in this process gets.
func Prefix() string { return fmt.Sprintf("t%d:", prefixes.Add(1)) }
