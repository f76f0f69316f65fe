package server

import (
	"errors"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	mserver "github.com/alicebob/miniredis/v2/server"
)

// storeClock drives the embedded Redis's clock. miniredis moves TTLs only
// on FastForward, so each tick moves them by the real time elapsed. With
// --embedded-redis-test-clock the store's clock is the real one plus an
// offset that advance adds to: TIME (which the scripts read), the
// absolute expiries (PEXPIREAT) and the TTLs jump together, and from
// there run at the real clock's pace. miniredis answers TIME from
// SetTime's value, so before each command the clock is set to the real
// time plus the offset (sync): TIME moves on between commands as on a
// real Redis, and fencing tokens taken from it stay distinct.
type storeClock struct {
	m    *miniredis.Miniredis
	test bool

	mu     sync.Mutex
	offset time.Duration
	last   time.Time
}

// errNoTestClock answers AdvanceClock on a gateway whose store's clock
// cannot be moved.
var errNoTestClock = errors.New("server: the store's clock moves only on the embedded store started with --embedded-redis-test-clock")

func newStoreClock(m *miniredis.Miniredis, test bool) *storeClock {
	c := &storeClock{m: m, test: test, last: time.Now()}
	if test {
		m.SetTime(c.last)
		m.Server().SetPreHook(func(*mserver.Peer, string, ...string) bool {
			c.sync()
			return false
		})
	}
	return c
}

// sync sets the store's time to the real time plus the offset, before a
// client's command. A script's own calls run while miniredis is locked
// (TryLock fails), so a script sees the time set before it began; so does
// a command that meets another client's command under way.
func (c *storeClock) sync() {
	if !c.m.TryLock() {
		return
	}
	c.m.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.SetTime(time.Now().Add(c.offset))
}

// run ticks until stop is closed.
func (c *storeClock) run(stop <-chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			c.tick(now)
		}
	}
}

func (c *storeClock) tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.test {
		c.m.SetTime(now.Add(c.offset))
	}
	c.m.FastForward(now.Sub(c.last))
	c.last = now
}

// advance moves the store's clock d ahead and returns its time.
func (c *storeClock) advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
	now := c.last.Add(c.offset)
	c.m.SetTime(now)
	c.m.FastForward(d)
	return now
}

// AdvanceClock moves the embedded store's clock d ahead, as if d had
// passed: leases, lock delays, user-lock windows and bans end as they
// would have, then every waiting acquire retries at once. It returns the
// store's time after the move. It is refused (an error) unless the
// gateway runs the embedded store with Config.EmbeddedRedisTestClock.
// The gateway's own timers (a waiting acquire's wait_ms, request
// timeouts, webhook retries) keep the real clock.
func (s *Server) AdvanceClock(d time.Duration) (time.Time, error) {
	if s.clock == nil || !s.clock.test {
		return time.Time{}, errNoTestClock
	}
	now := s.clock.advance(d)
	if s.waiter != nil {
		s.waiter.WakeAll()
	}
	return now, nil
}
