package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestMain(m *testing.M) {
	code := redistest.Run(m)
	gatewaytest.RemoveBinary()
	os.Exit(code)
}

// runJSON runs the command with args, -json and the gateway binary
// (gatewaytest.Binary), which must succeed, and decodes its report.
func runJSON(t *testing.T, args ...string) (*Report, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"-json", "-gateway", gatewaytest.Binary(t)}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("run %q: %v; stderr %q", args, err, stderr.String())
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout %q: not a JSON report: %v", stdout.String(), err)
	}
	return &rep, stdout.String()
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"a hand-off with one client is refused", func(c *Config) { c.Handoff, c.Concurrency = true, 1 }},
		{"negative waiters are refused", func(c *Config) { c.Waiters = -1 }},
		{"waiters above the cap are refused", func(c *Config) { c.Waiters = MaxWaiters + 1 }},
		{"waiters with the hand-off phases are refused", func(c *Config) { c.Waiters, c.Handoff = 10, true }},
		{"waiters with the primitives phases are refused", func(c *Config) { c.Waiters, c.Primitives = 10, true }},
		{"waiters with the returning phase are refused", func(c *Config) { c.Waiters, c.Returning = 10, 4 }},
		{"negative returning resources are refused", func(c *Config) { c.Returning = -1 }},
		{"returning above the load tool's clients is refused", func(c *Config) { c.Returning, c.Concurrency = 4, bench.MaxLoadConcurrency+1 }},
		{"an unknown topology is refused", func(c *Config) { c.Capacity, c.CapacityTopologies = true, []string{"g9"} }},
		{"capacity with a Redis of one's own is refused", func(c *Config) { c.Capacity, c.RedisURL = true, "redis://127.0.0.1:1" }},
		{"a missing etcd program is refused", func(c *Config) { c.Etcd, c.EtcdBench = true, "/nonexistent/etcd-bench" }},
		{"the product's bounds still hold", func(c *Config) { c.Duration = 6 * time.Minute }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			if err := cfg.Validate(); err == nil {
				t.Errorf("Validate: got nil, want an error")
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"the defaults are accepted", func(*Config) {}},
		{"a hand-off between two clients is accepted", func(c *Config) { c.Handoff, c.Concurrency = true, 2 }},
		{"returning over 4 resources is accepted", func(c *Config) { c.Returning = 4 }},
		{"the primitives with one client are accepted", func(c *Config) { c.Primitives, c.Concurrency = true, 1 }},
		{"waiters up to the cap are accepted", func(c *Config) { c.Waiters = MaxWaiters }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Errorf("Validate: got %v, want nil", err)
			}
		})
	}
}

func TestBadCommandLinesAreUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-duration", "6m"}, {"extra"}, {"-waiters", "20001"}, {"-nope"}} {
		var stderr bytes.Buffer
		var usage usageError
		if err := run(context.Background(), args, &bytes.Buffer{}, &stderr); !errors.As(err, &usage) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}

// TestEtcdProgramSmoke builds and runs the etcd program of the module
// tools/bench/etcd (embedded etcd) for one short round. It needs etcd's modules
// (the module proxy or the module cache) and a minute or more to build, so
// it runs only with LEASEGATE_TEST_ETCD=1:
//
//	LEASEGATE_TEST_ETCD=1 go -C tools/bench test -run EtcdProgramSmoke -v .
func TestEtcdProgramSmoke(t *testing.T) {
	t.Parallel()
	if os.Getenv("LEASEGATE_TEST_ETCD") != "1" {
		t.Skip("set LEASEGATE_TEST_ETCD=1 to build and run tools/bench/etcd")
	}
	cfg := DefaultConfig()
	cfg.RedisURL = redistest.Start(t).URL()
	cfg.Concurrency, cfg.Duration, cfg.Warmup, cfg.Rounds = 4, time.Second, 100*time.Millisecond, 1
	cfg.Etcd, cfg.EtcdBench = true, "etcd" // tools/bench/etcd, from this package's directory

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
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
	for _, p := range []EtcdPhase{e.Lock, e.Handoff} {
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

// runSmoke runs one round of 1 s phases (100 ms warm-up) with clients
// on a redis-server of its own, the phases set asks for, and returns
// the report.
func runSmoke(t *testing.T, clients int, set func(*Config)) *Report {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RedisURL = redistest.Start(t).URL()
	cfg.Concurrency, cfg.Duration, cfg.Warmup, cfg.Rounds = clients, time.Second, 100*time.Millisecond, 1
	set(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// TestRunSmokeHandoffAndPrimitives runs the optional phases for a second
// at low concurrency and checks that the report is sane; no speed is
// asserted.
func TestRunSmokeHandoffAndPrimitives(t *testing.T) {
	t.Parallel()
	rep := runSmoke(t, 3, func(c *Config) { c.Handoff, c.Primitives, c.LockSets = true, true, true })
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

// TestRunSmokeReturning runs the returning-clients phase for a second:
// 4 clients over 2 resources, so acquires wait and clients come back to
// names they have just released. No speed is asserted.
func TestRunSmokeReturning(t *testing.T) {
	t.Parallel()
	rep := runSmoke(t, 4, func(c *Config) { c.Returning = 2 })
	if len(rep.Phases) != 1 || len(rep.Returning) != 1 {
		t.Fatalf("got phases %+v and %d load reports, want the returning phase and its report", rep.Phases, len(rep.Returning))
	}
	p, lr := rep.Phases[0], rep.Returning[0]
	if p.Name != returningName || p.ComparedTo != "gateway" || p.Ratio <= 0 {
		t.Errorf("got phase %q compared to %q, ratio %v; want %q compared to gateway, ratio > 0", p.Name, p.ComparedTo, p.Ratio, returningName)
	}
	if p.Cycles <= 0 || p.Errors != 0 {
		t.Errorf("got %d cycles, %d errors (first: %s); want some, none", p.Cycles, p.Errors, p.FirstError)
	}
	if lr.Scenario != bench.Waiting || lr.Concurrency != 4 || lr.Resources != 2 {
		t.Errorf("load run: got scenario %q, %d clients over %d resources; want waiting, 4 over 2", lr.Scenario, lr.Concurrency, lr.Resources)
	}
	if lr.Fencing.Grants != p.Cycles || lr.Fencing.Violations != 0 {
		t.Errorf("fencing: got %d grants checked, %d violations; want %d, 0", lr.Fencing.Grants, lr.Fencing.Violations, p.Cycles)
	}
	a := lr.Operations["acquire"]
	if p.P50ms != a.P50MS || p.P99ms < p.P50ms || a.MaxMS < p.P99ms {
		t.Errorf("acquire: got phase p50 %.3f p99 %.3f, load p50 %.3f max %.3f ms; want the load's, in order", p.P50ms, p.P99ms, a.P50MS, a.MaxMS)
	}
	if p.RedisCalls["publish"] <= 0 {
		t.Errorf("got %.2f PUBLISH per cycle, want some (a release with waiters wakes one): %v", p.RedisCalls["publish"], p.RedisCalls)
	}
	var text bytes.Buffer
	rep.Print(&text)
	for _, want := range []string{"returning", "acquire p50", "max", "violations"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, text.String())
		}
	}
	t.Logf("\n%s", text.String())
}

// TestWaitersCommand: -waiters starts the gateway binary as `leasegate
// serve`, parks a few waiting acquires on it, reads its memory and
// releases them all.
func TestWaitersCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rep, out := runJSON(t, "-waiters", "20", "-redis-url", srv.URL(), "-log-level", "warn")
	w := rep.Waiters
	if w == nil {
		t.Fatalf("report has no waiters measurement: %s", out)
	}
	if w.Waiters != 20 || w.Granted != 20 || w.TimedOut != 0 || w.Errors != 0 {
		t.Errorf("got %d waiters, %d granted, %d timed out, %d errors; want 20, 20, 0, 0 (first error %q)",
			w.Waiters, w.Granted, w.TimedOut, w.Errors, w.FirstError)
	}
	if w.At.Waiters != 20 || w.After.Waiters != 0 {
		t.Errorf("waiters gauge: got %v with the waiters and %v after, want 20 and 0", w.At.Waiters, w.After.Waiters)
	}
	if w.Before.RSS <= 0 || w.At.RSS <= 0 || w.At.HWM < w.At.RSS {
		t.Errorf("got RSS %d before, %d with the waiters (HWM %d); want positive, HWM >= RSS", w.Before.RSS, w.At.RSS, w.At.HWM)
	}
	if w.At.Goroutines < w.Before.Goroutines+20 {
		t.Errorf("goroutines: got %v with 20 waiters, %v before; want at least one more per waiter", w.At.Goroutines, w.Before.Goroutines)
	}
	if len(rep.Rounds) != 0 {
		t.Errorf("got %d rounds, want none: -waiters runs alone", len(rep.Rounds))
	}
}

// TestCapacityCommand: -capacity starts its own redis-servers (one,
// then a Cluster of two masters) and the gateway binary as two
// `leasegate serve` processes, runs every phase briefly and writes the
// model's inputs; the figures must be those of processes that did the
// work.
func TestCapacityCommand(t *testing.T) {
	t.Parallel()
	rep, _ := runJSON(t, "-capacity", "-topologies", "g2,c2", "-c", "4", "-duration", "200ms", "-warmup", "0",
		"-rounds", "1", "-redis-server", redistest.Binary(t), "-log-level", "warn")
	c := rep.Capacity
	if c == nil || len(c.Topologies) != 2 {
		t.Fatalf("got %+v, want a capacity report of 2 topologies", c)
	}
	for _, topo := range c.Topologies {
		if got := len(topo.Phases); got != 6 {
			t.Errorf("%s: got %d phases, want 6", topo.Name, got)
		}
		for _, p := range topo.Phases {
			if p.Cycles == 0 || p.Errors != 0 {
				t.Errorf("%s %s: got %d cycles, %d errors (%s); want some, none", topo.Name, p.Name, p.Cycles, p.Errors, p.FirstError)
			}
			if p.HTTPBytes < 200 || p.RedisBytes < 100 || p.RedisCalls["evalsha"] < 1 {
				t.Errorf("%s %s: got %.0f HTTP bytes, %.0f Redis bytes, %.1f EVALSHA per cycle; want a request each way, a script",
					topo.Name, p.Name, p.HTTPBytes, p.RedisBytes, p.RedisCalls["evalsha"])
			}
			if p.GatewayCPUus <= 0 && p.RedisCPUus <= 0 {
				t.Errorf("%s %s: got no CPU per cycle in the gateways or Redis", topo.Name, p.Name)
			}
			// A hand-off wakes its waiter with a sharded message on a
			// Cluster, with a classic one on a single Redis.
			pub := map[bool]string{true: "spublish", false: "publish"}[topo.Cluster]
			if p.Name == "handoff" && p.RedisCalls[pub] <= 0 {
				t.Errorf("%s handoff: got calls %v, want %s", topo.Name, p.RedisCalls, pub)
			}
		}
		// 32 locks and waiters and 16 streams per client. used_memory
		// also moves with the clients' buffers, so at 128 locks only its
		// having moved is certain; the goroutines of 128 waiters are not
		// lost in the RSS.
		if m := topo.Memory; m.Held != 128 || m.Waiters != 128 || m.Streams != 64 || m.RedisPerLock == 0 || m.GatewayRSSPerWaiter <= 0 {
			t.Errorf("%s: got %d locks, %d waiters, %d streams, %.0f Redis bytes per held lock, %.0f gateway bytes per waiter; want 128, 128, 64, not 0, > 0",
				topo.Name, m.Held, m.Waiters, m.Streams, m.RedisPerLock, m.GatewayRSSPerWaiter)
		}
	}
	if c.Topologies[1].Masters != 2 || !c.Topologies[1].Cluster {
		t.Errorf("c2: got %+v, want a Cluster of 2 masters", c.Topologies[1].Topology)
	}
}
