package redislock_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// lossySubscriber subscribes through a client whose connections the test
// can cut; once cut, every later subscription goes to an address nobody
// listens on, so the subscription is gone for good while ordinary
// commands still work.
type lossySubscriber struct {
	live, dead *redis.Client

	mu    sync.Mutex
	conns []net.Conn
	lost  bool
}

func newLossySubscriber(t *testing.T, addr string) *lossySubscriber {
	t.Helper()
	s := &lossySubscriber{}
	s.live = redis.NewClient(&redis.Options{
		Addr: addr,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if err == nil {
				s.mu.Lock()
				s.conns = append(s.conns, c)
				s.mu.Unlock()
			}
			return c, err
		},
	})
	s.dead = redis.NewClient(&redis.Options{Addr: redistest.DeadAddr(t), MaxRetries: -1})
	t.Cleanup(func() { _ = s.live.Close(); _ = s.dead.Close() })
	return s
}

func (s *lossySubscriber) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	s.mu.Lock()
	lost := s.lost
	s.mu.Unlock()
	if lost {
		return s.dead.Subscribe(ctx, channels...)
	}
	return s.live.Subscribe(ctx, channels...)
}

// cut closes the live subscription's connection and every later one.
func (s *lossySubscriber) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lost = true
	for _, c := range s.conns {
		_ = c.Close()
	}
}

// TestWaiterPollsAfterTheSubscriptionIsLost: a head that parked while the
// subscription was active must start polling once it is lost and cannot
// come back, or a release published meanwhile strands it until the
// holder's expiry (docs/waiting.md: "while the subscription is not active,
// heads also re-check every PollInterval").
func TestWaiterPollsAfterTheSubscriptionIsLost(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, addr string) {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		prefix := fmt.Sprintf("wl:%d:", time.Now().UnixNano())
		ch := prefix + "released"
		l := wrap(redislock.New(rdb, redislock.Config{Prefix: prefix, ReleaseChannel: ch}))
		sub := newLossySubscriber(t, addr)
		w := redislock.NewWaiter(sub, redislock.WaiterOptions{Channel: ch, PollInterval: 20 * time.Millisecond})
		t.Cleanup(w.Close)
		waitActive(t, w)

		if _, err := l.Acquire(context.Background(), "job", "holder", time.Hour); err != nil {
			t.Fatalf("hold: %v", err)
		}
		got := make(chan waitOutcome, 1)
		go func() {
			res, err := w.Acquire(context.Background(), l.Locker, redislock.WaitRequest{Resource: "job", Owner: "waiter", TTL: time.Minute, Wait: 5 * time.Second})
			got <- waitOutcome{res: res, err: err, at: time.Now()}
		}()
		redistest.Eventually(t, 10*time.Second, "waiter queued", func() bool { return w.Queued(l.Locker, "job") == 1 })

		sub.cut()
		redistest.Eventually(t, 10*time.Second, "subscription lost", func() bool { return !w.Active() })
		if rr, err := l.Release(context.Background(), "job", "holder", 0); err != nil || rr != leasegate.Released {
			t.Fatalf("release: got %v, %v; want released", rr, err)
		}
		o := receive(t, got, 30*time.Second)
		if o.err != nil || !o.res.Acquired {
			t.Fatalf("got %+v, %v; want acquired by polling after the subscription was lost", o.res, o.err)
		}
	}
	t.Run("on miniredis", func(t *testing.T) { run(t, miniredis.RunT(t).Addr()) })
	t.Run("on redis-server", func(t *testing.T) { run(t, redistest.Start(t).Addr()) })
}

// Compile-time check that the test double is a Subscriber.
var _ redislock.Subscriber = (*lossySubscriber)(nil)
