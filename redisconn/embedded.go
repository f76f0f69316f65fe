package redisconn

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	mserver "github.com/alicebob/miniredis/v2/server"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// DefaultEmbeddedAddr is where the embedded Redis listens unless
// --embedded-redis-addr says otherwise: loopback, on a free port (so two
// development gateways never collide); the start log names the port.
const DefaultEmbeddedAddr = "127.0.0.1:0"

// startEmbedded runs the in-memory Redis (miniredis) on o.EmbeddedAddr,
// which must be a loopback address, and logs how to reach it with
// redis-cli.
func (c *Conn) startEmbedded() error {
	addr := cmp.Or(c.opts.EmbeddedAddr, DefaultEmbeddedAddr)
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return fmt.Errorf("redisconn: start embedded redis on %s: %w", addr, err)
	}
	c.mini = m
	c.stopEmbedded = make(chan struct{})
	c.clock = newStoreClock(m, c.opts.TestClock)
	go c.clock.run(c.stopEmbedded)
	c.Client = redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: noRetries})
	c.log.Warn("no --redis-url given: using an embedded in-memory Redis; state is lost at exit and cannot be shared by several gateways (development only)",
		zap.String("embedded_redis", m.Addr()), zap.String("redis_cli", redisCLI(m.Addr())))
	return nil
}

// redisCLI is the redis-cli command line that reaches addr.
func redisCLI(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "redis-cli -u redis://" + addr
	}
	if host == "127.0.0.1" || host == "localhost" {
		return "redis-cli -p " + port
	}
	if strings.Contains(host, ":") {
		host = "'" + host + "'"
	}
	return "redis-cli -h " + host + " -p " + port
}

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

// ErrNoTestClock answers AdvanceClock on a gateway whose store's clock
// cannot be moved.
var ErrNoTestClock = errors.New("redisconn: the store's clock moves only on the embedded store started with --embedded-redis-test-clock")

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
// would have. It returns the store's time after the move. It is refused
// (ErrNoTestClock) unless the options ask for the embedded store with
// TestClock.
func (c *Conn) AdvanceClock(d time.Duration) (time.Time, error) {
	if c.clock == nil || !c.clock.test {
		return time.Time{}, ErrNoTestClock
	}
	return c.clock.advance(d), nil
}
