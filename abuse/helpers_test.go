package abuse

import (
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/logbuf"
	"github.com/leasegate/leasegate/internal/redistest"
)

// backend is a Redis the engine runs on in a test, with a way to let time
// pass: miniredis moves its clock, a real redis-server needs real time.
type backend struct {
	name    string
	rdb     redis.UniversalClient
	mini    *miniredis.Miniredis // nil for the real server
	advance func(d time.Duration)
}

// eachBackend runs f on miniredis and on a real redis-server.
func eachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	t.Helper()
	t.Run("on miniredis", func(t *testing.T) { f(t, miniBackend(t)) })
	t.Run("on a real redis-server", func(t *testing.T) {
		srv := redistest.Start(t)
		f(t, backend{name: "redis", rdb: srv.Client(t), advance: func(d time.Duration) {
			time.Sleep(d) // real expiry needs real time; TTLs in these tests are short
		}})
	})
}

// miniBackend is a miniredis with a frozen clock that advance moves.
func miniBackend(t *testing.T) backend {
	t.Helper()
	m := miniredis.RunT(t)
	now := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	var mu sync.Mutex
	m.SetTime(now)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return backend{name: "miniredis", rdb: rdb, mini: m, advance: func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
		m.SetTime(now)
		m.FastForward(d)
	}}
}

func newService(t *testing.T, b backend, pol Policies) (*Service, *logbuf.Buffer) {
	t.Helper()
	lb := &logbuf.Buffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel)
	return New(b.rdb, Options{Prefix: "lgtest:", Policies: pol, Log: zap.New(core)}), lb
}

func policies(max int) Policies {
	p := DefaultPolicies()
	p.Default.MaxAttempts = max
	return p
}
