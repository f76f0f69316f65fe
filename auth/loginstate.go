package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// loginState is what the /ops/ page's logins share between gateways:
// counters of failed logins, each in a fixed window that starts at its
// first failure, and the ids of sessions ended by logout. redisState
// keeps it in Redis (server.New always has one); memState in this process
// only, for a Sessions built without Redis (tests, embedding).
type loginState interface {
	// hit counts one attempt against key and returns the count in the
	// current window (this attempt included) and the time left in it.
	hit(ctx context.Context, key string, window time.Duration, now time.Time) (int64, time.Duration, error)
	// undo takes one attempt back (a login that succeeded). It never
	// creates a counter.
	undo(ctx context.Context, key string, now time.Time) error
	// revoke marks key ended for ttl.
	revoke(ctx context.Context, key string, ttl time.Duration, now time.Time) error
	// revoked reports whether key is marked ended.
	revoked(ctx context.Context, key string, now time.Time) (bool, error)
}

// redisState keeps the login state in Redis. Every call touches one key,
// so it runs unchanged on Redis Cluster; windows and revocations expire
// by Redis's TTLs.
type redisState struct{ rdb redis.UniversalClient }

func (r redisState) hit(ctx context.Context, key string, window time.Duration, _ time.Time) (int64, time.Duration, error) {
	pipe := r.rdb.TxPipeline()
	// SET NX PX starts a window; INCR keeps the TTL.
	pipe.SetNX(ctx, key, 0, window)
	n := pipe.Incr(ctx, key)
	ttl := pipe.PTTL(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, 0, err
	}
	left := ttl.Val()
	if left <= 0 {
		left = window
	}
	return n.Val(), left, nil
}

func (r redisState) undo(ctx context.Context, key string, _ time.Time) error {
	err := r.rdb.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, key).Int64()
		if errors.Is(err, redis.Nil) || (err == nil && n <= 0) {
			return nil // the window ended meanwhile: nothing to take back
		}
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Decr(ctx, key)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, redis.TxFailedErr) {
		return nil // another attempt raced us: the count stays higher, never lower
	}
	return err
}

func (r redisState) revoke(ctx context.Context, key string, ttl time.Duration, _ time.Time) error {
	return r.rdb.Set(ctx, key, 1, ttl).Err()
}

func (r redisState) revoked(ctx context.Context, key string, _ time.Time) (bool, error) {
	n, err := r.rdb.Exists(ctx, key).Result()
	return n > 0, err
}

// memState keeps the login state in this process, by the clock passed in.
type memState struct {
	mu      sync.Mutex
	entries map[string]memEntry
}

type memEntry struct {
	n     int64
	until time.Time
}

// memStateSweep: past this many entries, expired ones are dropped.
const memStateSweep = 4096

func newMemState() *memState { return &memState{entries: map[string]memEntry{}} }

func (m *memState) live(key string, now time.Time) (memEntry, bool) {
	e, ok := m.entries[key]
	if ok && !now.Before(e.until) {
		delete(m.entries, key)
		return memEntry{}, false
	}
	return e, ok
}

func (m *memState) sweep(now time.Time) {
	if len(m.entries) < memStateSweep {
		return
	}
	for k := range m.entries {
		m.live(k, now)
	}
}

func (m *memState) hit(_ context.Context, key string, window time.Duration, now time.Time) (int64, time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	e, ok := m.live(key, now)
	if !ok {
		e = memEntry{until: now.Add(window)}
	}
	e.n++
	m.entries[key] = e
	return e.n, e.until.Sub(now), nil
}

func (m *memState) undo(_ context.Context, key string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.live(key, now); ok && e.n > 0 {
		e.n--
		m.entries[key] = e
	}
	return nil
}

func (m *memState) revoke(_ context.Context, key string, ttl time.Duration, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweep(now)
	m.entries[key] = memEntry{n: 1, until: now.Add(ttl)}
	return nil
}

func (m *memState) revoked(_ context.Context, key string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.live(key, now)
	return ok, nil
}
