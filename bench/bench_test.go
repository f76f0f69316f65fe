package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/redistest"
)

// TestRunSmoke runs both phases for a second at low concurrency against a
// throwaway redis-server and checks that the report is sane. It asserts no
// speed: docs/benchmarks.md has the figures. Only this test takes a CPU
// profile (a process has one).
func TestRunSmoke(t *testing.T) {
	t.Parallel()
	cfg := smokeConfig(t)
	var cpu, mem bytes.Buffer
	cfg.CPUProfile = &cpu
	cfg.MemProfile = &mem

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := len(rep.Rounds), 1; got != want {
		t.Fatalf("rounds: got %d, want %d", got, want)
	}
	for _, p := range []bench.Phase{rep.Floor, rep.Bare, rep.Gateway} {
		if p.Cycles <= 0 {
			t.Errorf("%s: got %d cycles, want some", p.Name, p.Cycles)
		}
		if p.Errors != 0 {
			t.Errorf("%s: got %d errors (first: %s), want none", p.Name, p.Errors, p.FirstError)
		}
		if p.P50ms <= 0 || p.P99ms < p.P50ms {
			t.Errorf("%s: got p50 %.3f ms, p99 %.3f ms, want 0 < p50 <= p99", p.Name, p.P50ms, p.P99ms)
		}
		if p.RedisCalls["evalsha"] < 0.99 {
			t.Errorf("%s: got %.2f EVALSHA per cycle, want at least 1 (calls: %v)", p.Name, p.RedisCalls["evalsha"], p.RedisCalls)
		}
	}
	if rep.Ratio <= 0 || rep.BareRatio <= 0 || rep.OverBare <= 0 {
		t.Errorf("ratios: got %v to the floor, bare %v to the floor, %v over bare; want all > 0", rep.Ratio, rep.BareRatio, rep.OverBare)
	}
	if got := rep.Scripts["bare http acquire"]; got["set"] != 1 || got["evalsha"] != 0 {
		t.Errorf("bare http acquire alone: got %v, want one SET and no script", got)
	}
	if got := rep.Bare.RedisCalls["set"]; got < 0.99 || got > 1.01 {
		t.Errorf("bare http: got %.2f SET per cycle, want 1", got)
	}
	if got := rep.Floor.RedisCalls["set"]; got < 0.99 || got > 1.01 {
		t.Errorf("floor: got %.2f SET per cycle, want 1", got)
	}
	if got := rep.Scripts["gateway acquire"]["evalsha"]; got != 1 {
		t.Errorf("gateway acquire alone: got %d EVALSHA, want 1 (%v)", got, rep.Scripts)
	}
	if cpu.Len() == 0 || mem.Len() == 0 {
		t.Errorf("profiles: got %d bytes of CPU and %d of allocs profile, want both", cpu.Len(), mem.Len())
	}

	var text bytes.Buffer
	rep.Print(&text)
	for _, want := range []string{"floor", "bare http", "gateway", "cycles/s", "leasegate ÷ bare HTTP"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, text.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report as JSON: %v", err)
	}
	t.Logf("\n%s", text.String())
}

// smokeConfig is a short run (4 clients, 1 s, one round) on the
// redis-server the run starts itself.
func smokeConfig(t *testing.T) bench.Config {
	t.Helper()
	cfg := bench.DefaultConfig()
	cfg.RedisServer = redistest.Binary(t)
	cfg.Concurrency = 4
	cfg.Duration = time.Second
	cfg.Warmup = 100 * time.Millisecond
	cfg.Rounds = 1
	return cfg
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*bench.Config)
	}{
		{"a duration above the cap is refused", func(c *bench.Config) { c.Duration = bench.MaxDuration + time.Second }},
		{"zero concurrency is refused", func(c *bench.Config) { c.Concurrency = 0 }},
		{"zero rounds are refused", func(c *bench.Config) { c.Rounds = 0 }},
		{"a fractional TTL is refused", func(c *bench.Config) { c.TTL = 1500 * time.Millisecond }},
		{"a non-loopback Redis is refused", func(c *bench.Config) { c.RedisURL = "redis://10.0.0.1:6379" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bench.DefaultConfig()
			tc.edit(&cfg)
			if err := cfg.Validate(); err == nil {
				t.Errorf("Validate: got nil, want an error")
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*bench.Config)
	}{
		{"the defaults are accepted", func(*bench.Config) {}},
		{"one client for one round is accepted", func(c *bench.Config) { c.Concurrency, c.Rounds = 1, 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bench.DefaultConfig()
			tc.edit(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
		})
	}
}

// TestTheMeasuredAcquireWritesNoFenceKey: the lock hash is also the
// fence (docs/keys.md), so the acquire measured alone runs no SET.
func TestTheMeasuredAcquireWritesNoFenceKey(t *testing.T) {
	t.Parallel()
	cfg := smokeConfig(t)
	cfg.Duration = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	rep, err := bench.Run(ctx, cfg)
	cancel()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := rep.Scripts["gateway acquire"]["set"]; got != 0 {
		t.Errorf("gateway acquire alone ran %d SET, want 0 (%v)", got, rep.Scripts["gateway acquire"])
	}
}
