package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/redistest"
)

// TestRunSmoke runs both phases for a second at low concurrency against a
// throwaway redis-server and checks that the report is sane. It asserts no
// speed: docs/benchmarks.md has the figures. It and
// TestRunSmokeHandoffAndPrimitives each have a Redis of their own, so
// they run at once; only this one takes a CPU profile (a process has one).
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
	for _, p := range []bench.Phase{rep.Floor, rep.Gateway} {
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
	if rep.Ratio <= 0 {
		t.Errorf("ratio: got %v, want > 0", rep.Ratio)
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
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "etcd") {
		t.Errorf("notes: got %q, want the etcd phase's", rep.Notes)
	}

	var text bytes.Buffer
	rep.Print(&text)
	for _, want := range []string{"floor", "gateway", "cycles/s"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, text.String())
		}
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("report as JSON: %v", err)
	}
	t.Logf("\n%s", text.String())
}

// smokeConfig is a short run (4 clients, 1 s, one round, the etcd phases
// asked for) on a throwaway redis-server.
func smokeConfig(t *testing.T) bench.Config {
	t.Helper()
	cfg := bench.DefaultConfig()
	cfg.RedisURL = redistest.Start(t).URL()
	cfg.Concurrency = 4
	cfg.Duration = time.Second
	cfg.Warmup = 100 * time.Millisecond
	cfg.Rounds = 1
	cfg.Etcd = true
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
		{"a hand-off with one client is refused", func(c *bench.Config) { c.Handoff, c.Concurrency = true, 1 }},
		{"negative waiters are refused", func(c *bench.Config) { c.Waiters = -1 }},
		{"waiters above the cap are refused", func(c *bench.Config) {
			c.Waiters, c.GatewayCommand = bench.MaxWaiters+1, "leasegate"
		}},
		{"waiters without a leasegate binary are refused", func(c *bench.Config) { c.Waiters = 10 }},
		{"waiters with the hand-off phases are refused", func(c *bench.Config) {
			c.Waiters, c.GatewayCommand, c.Handoff = 10, "leasegate", true
		}},
		{"waiters with the primitives phases are refused", func(c *bench.Config) {
			c.Waiters, c.GatewayCommand, c.Primitives = 10, "leasegate", true
		}},
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
		{"a hand-off between two clients is accepted", func(c *bench.Config) { c.Handoff, c.Concurrency = true, 2 }},
		{"the primitives with one client are accepted", func(c *bench.Config) { c.Primitives, c.Concurrency = true, 1 }},
		{"waiters up to the cap are accepted", func(c *bench.Config) {
			c.Waiters, c.GatewayCommand = bench.MaxWaiters, "leasegate"
		}},
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

// TestEtcdProgramSmoke builds and runs the etcd program of the module
// bench/etcd (embedded etcd) for one short round. It needs etcd's modules
// (the module proxy or the module cache) and a minute or more to build, so
// it runs only with LEASEGATE_TEST_ETCD=1:
//
//	LEASEGATE_TEST_ETCD=1 go test -run EtcdProgramSmoke -v ./bench/
func TestEtcdProgramSmoke(t *testing.T) {
	t.Parallel()
	if os.Getenv("LEASEGATE_TEST_ETCD") != "1" {
		t.Skip("set LEASEGATE_TEST_ETCD=1 to build and run bench/etcd")
	}
	cfg := smokeConfig(t)
	cfg.EtcdBench = "etcd" // bench/etcd, from this package's directory

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	e := rep.Etcd
	if e == nil {
		t.Fatalf("no etcd result; notes %q", rep.Notes)
	}
	if e.Version == "" || !e.Embedded {
		t.Errorf("got version %q, embedded %v; want a version, embedded", e.Version, e.Embedded)
	}
	for _, p := range []bench.EtcdPhase{e.Lock, e.Handoff} {
		if p.Ops <= 0 || p.Errors != 0 || p.Violations != 0 {
			t.Errorf("%s: got %d ops, %d errors (first: %s), %d violations; want ops, no errors, no violations",
				p.Phase, p.Ops, p.Errors, p.FirstError, p.Violations)
		}
		if p.P99ms < p.P50ms {
			t.Errorf("%s: got p50 %.3f ms > p99 %.3f ms", p.Phase, p.P50ms, p.P99ms)
		}
	}
	if e.LockRatio <= 0 {
		t.Errorf("lock ratio: got %v, want > 0", e.LockRatio)
	}
	var text bytes.Buffer
	rep.Print(&text)
	t.Logf("\n%s", text.String())
}

// TestRunSmokeHandoffAndPrimitives runs the optional phases for a second
// at low concurrency and checks that the report is sane; no speed is
// asserted.
func TestRunSmokeHandoffAndPrimitives(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := bench.DefaultConfig()
	cfg.RedisURL = srv.URL()
	cfg.Concurrency = 3
	cfg.Duration = time.Second
	cfg.Warmup = 100 * time.Millisecond
	cfg.Rounds = 1
	cfg.Handoff = true
	cfg.Primitives = true
	cfg.LockSets = true

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := bench.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []struct{ name, comparedTo string }{{"set8", "gateway"}, {"sem", "floor"}, {"claim", "floor"}, {"blpop", ""}, {"handoff", "blpop"}}
	if len(rep.Phases) != len(want) {
		t.Fatalf("phases: got %d, want %d: %+v", len(rep.Phases), len(want), rep.Phases)
	}
	for i, p := range rep.Phases {
		if p.Name != want[i].name || p.ComparedTo != want[i].comparedTo {
			t.Errorf("phase %d: got %q compared to %q, want %q compared to %q", i, p.Name, p.ComparedTo, want[i].name, want[i].comparedTo)
		}
		if p.Cycles <= 0 || p.Errors != 0 {
			t.Errorf("%s: got %d cycles, %d errors (first: %s); want some, none", p.Name, p.Cycles, p.Errors, p.FirstError)
		}
		if p.Ratio <= 0 {
			t.Errorf("%s: got ratio %v, want > 0", p.Name, p.Ratio)
		}
		if p.P99ms < p.P50ms {
			t.Errorf("%s: got p50 %.3f ms above p99 %.3f ms", p.Name, p.P50ms, p.P99ms)
		}
	}
	if set := rep.Phases[0]; set.CPURatio <= 0 || set.RedisCalls["hset"] < 7.99 {
		t.Errorf("set8: got cpu ratio %v and %.2f HSET per cycle, want > 0 and 8 (one script for the set): %v", set.CPURatio, set.RedisCalls["hset"], set.RedisCalls)
	}
	if got := rep.Scripts["set8 acquire"]["evalsha"]; got != 1 {
		t.Errorf("set8 acquire alone: got %d EVALSHA, want 1 (%v)", got, rep.Scripts)
	}
	hand := rep.Phases[4]
	if hand.RedisCalls["publish"] < 0.5 {
		t.Errorf("handoff: got %.2f PUBLISH per hand-off, want about 1 (the release wakes a waiter): %v", hand.RedisCalls["publish"], hand.RedisCalls)
	}
	if got := rep.Phases[3].RedisCalls["blpop"]; got < 0.99 || got > 1.01 {
		t.Errorf("blpop: got %.2f BLPOP per hand-off, want 1", got)
	}
	if got := rep.Scripts["claim acquire"]["evalsha"]; got != 1 {
		t.Errorf("claim acquire alone: got %d EVALSHA, want 1 (%v)", got, rep.Scripts)
	}
	var text bytes.Buffer
	rep.Print(&text)
	for _, want := range []string{"handoff", "blpop", "sem", "claim", "set8", "proc cpu per cycle", "release to the next holder"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, text.String())
		}
	}
	t.Logf("\n%s", text.String())
}

// TestTheMeasuredAcquireWritesNoFenceKey: the lock hash is also the
// fence (docs/keys.md), so the acquire measured alone runs no SET.
func TestTheMeasuredAcquireWritesNoFenceKey(t *testing.T) {
	t.Parallel()
	cfg := smokeConfig(t)
	cfg.Etcd = false
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
