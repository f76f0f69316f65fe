package redislock_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// switchSubscriber subscribes through live while up, else through a
// client of an address nobody listens on.
type switchSubscriber struct {
	live, dead *redis.Client
	up         atomic.Bool
}

func (s *switchSubscriber) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	if s.up.Load() {
		return s.live.Subscribe(ctx, channels...)
	}
	return s.dead.Subscribe(ctx, channels...)
}

// records are the log records at level whose message contains snippet.
func records(t *testing.T, lb *logtest.Buffer, level, snippet string) int {
	t.Helper()
	n := 0
	for _, r := range lb.Records(t) {
		if msg, _ := r["msg"].(string); r["level"] == level && strings.Contains(msg, snippet) {
			n++
		}
	}
	return n
}

// TestAnOutageOfTheSubscriptionIsLoggedOnceNotPerRetry: while Redis is
// unreachable the Waiter retries its subscription with a back-off, and
// used to warn at every retry (a tight loop of "subscription lost" in the
// log of a gateway started without Redis). It warns once per outage,
// retries at debug level, and says when the subscription is back.
func TestAnOutageOfTheSubscriptionIsLoggedOnceNotPerRetry(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	sub := &switchSubscriber{
		live: redis.NewClient(&redis.Options{Addr: m.Addr()}),
		dead: redis.NewClient(&redis.Options{Addr: redistest.DeadAddr(t), MaxRetries: -1, DialerRetries: 1}),
	}
	t.Cleanup(func() { _ = sub.live.Close(); _ = sub.dead.Close() })
	lb := &logtest.Buffer{}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel))
	w := redislock.NewWaiter(sub, redislock.WaiterOptions{Channel: "lgtest:released", Log: log})
	t.Cleanup(w.Close)

	// Retries come after 50 ms, 100 ms, 200 ms, ...: wait for four of
	// them (or for a second warning, which fails below at once).
	redistest.Eventually(t, 10*time.Second, "four retries", func() bool {
		return records(t, lb, "debug", "retrying") >= 4 || records(t, lb, "warn", "subscription") >= 2
	})
	if n := records(t, lb, "warn", "subscription"); n != 1 {
		t.Fatalf("got %d subscription warnings for one outage, want 1: %s", n, lb.String())
	}

	sub.up.Store(true)
	waitActive(t, w)
	redistest.Eventually(t, 5*time.Second, "a record that the subscription is back", func() bool {
		return records(t, lb, "info", "back") == 1
	})

	// A new outage is news again.
	sub.up.Store(false)
	m.Close()
	redistest.Eventually(t, 10*time.Second, "a warning for the second outage", func() bool {
		return records(t, lb, "warn", "subscription") == 2
	})
}
