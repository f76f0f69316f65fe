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
// speed: docs/benchmarks.md has the figures.
func TestRunSmoke(t *testing.T) {
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
	if err := bench.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate(): got %v, want nil", err)
	}
}

// TestEtcdProgramSmoke builds and runs the etcd program of the module
// bench/etcd (embedded etcd) for one short round. It needs etcd's modules
// (the module proxy or the module cache) and a minute or more to build, so
// it runs only with LEASEGATE_TEST_ETCD=1:
//
//	LEASEGATE_TEST_ETCD=1 go test -run EtcdProgramSmoke -v ./bench/
func TestEtcdProgramSmoke(t *testing.T) {
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
