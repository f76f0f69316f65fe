package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/alicebob/miniredis/v2"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
)

var (
	scriptOne  = redis.NewScript("return 1")
	scriptBoom = redis.NewScript("return redis.error_reply('BOOM on purpose')")
	scriptAnon = redis.NewScript("return 2")
)

// sample finds the sample of family with label op=op (nil when none).
func sample(t *testing.T, m *Metrics, family, op string) *dto.Metric {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "op" && l.GetValue() == op {
					return mt
				}
			}
		}
	}
	return nil
}

// latencyCount is how many calls RedisLatency observed for op.
func latencyCount(t *testing.T, m *Metrics, op string) uint64 {
	t.Helper()
	return sample(t, m, "leasegate_redis_duration_seconds", op).GetHistogram().GetSampleCount()
}

// errorCount is RedisErrors for op.
func errorCount(t *testing.T, m *Metrics, op string) float64 {
	t.Helper()
	return sample(t, m, "leasegate_redis_errors_total", op).GetCounter().GetValue()
}

// wantCounts checks how many calls RedisLatency observed for op and how
// many of them RedisErrors counted.
func wantCounts(t *testing.T, m *Metrics, op string, observations uint64, errs float64) {
	t.Helper()
	if got := latencyCount(t, m, op); got != observations {
		t.Errorf("got %d observations for op %s, want %d", got, op, observations)
	}
	if got := errorCount(t, m, op); got != errs {
		t.Errorf("got %v errors for op %s, want %v", got, op, errs)
	}
}

func testRedisHook(t *testing.T, addr string) {
	ctx := context.Background()
	m := NewStandalone()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(m.RedisHook(map[string]*redis.Script{"one": scriptOne, "boom": scriptBoom}))

	t.Run("a missing key is an answer, not an error", func(t *testing.T) {
		if err := rdb.Get(ctx, "redishook:missing").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET: got %v, want redis.Nil", err)
		}
		wantCounts(t, m, "get", 1, 0)
	})
	t.Run("a script is counted once under its name, NOSCRIPT fallback included", func(t *testing.T) {
		for i := 0; i < 2; i++ { // first run: EVALSHA -> NOSCRIPT -> EVAL; second: EVALSHA
			if err := scriptOne.Run(ctx, rdb, nil).Err(); err != nil {
				t.Fatalf("run: %v", err)
			}
		}
		wantCounts(t, m, "one", 2, 0)
		if got := latencyCount(t, m, "script"); got != 0 {
			t.Errorf("got %d observations for op script, want 0", got)
		}
	})
	t.Run("a script that is not listed is labelled script", func(t *testing.T) {
		if err := scriptAnon.Run(ctx, rdb, nil).Err(); err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := latencyCount(t, m, "script"); got != 1 {
			t.Errorf("got %d observations for op script, want 1", got)
		}
	})
	t.Run("a script error counts as an error of that script", func(t *testing.T) {
		if err := scriptBoom.Run(ctx, rdb, nil).Err(); err == nil {
			t.Fatalf("run: got nil error, want BOOM")
		}
		if got := errorCount(t, m, "boom"); got != 1 {
			t.Errorf("got %v errors for op boom, want 1", got)
		}
	})
	t.Run("a pipeline is one observation", func(t *testing.T) {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "redishook:k", "v", 0)
			p.Get(ctx, "redishook:k")
			return nil
		})
		if err != nil {
			t.Fatalf("pipeline: %v", err)
		}
		if got := latencyCount(t, m, "pipeline:set"); got != 1 {
			t.Errorf("got %d pipeline observations, want 1", got)
		}
		if got := latencyCount(t, m, "set"); got != 0 {
			t.Errorf("got %d set observations, want 0 (counted as the pipeline)", got)
		}
	})
}

func TestRedisHook(t *testing.T) {
	t.Run("on miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		testRedisHook(t, m.Addr())
	})
	t.Run("on redis-server", func(t *testing.T) {
		testRedisHook(t, redistest.Start(t).Addr())
	})
	t.Run("an unreachable Redis counts as errors", func(t *testing.T) {
		srv := miniredis.RunT(t)
		m := NewStandalone()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		rdb.AddHook(m.RedisHook(nil))
		srv.SetError("LOADING on purpose")
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatalf("ping: got nil error, want the injected error")
		}
		srv.Close()
		if err := rdb.Ping(context.Background()).Err(); err == nil {
			t.Fatalf("ping after close: got nil error, want a connection error")
		}
		if got := errorCount(t, m, "ping"); got != 2 {
			t.Errorf("got %v ping errors, want 2", got)
		}
	})
}
