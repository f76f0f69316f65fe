package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The benchmark's logic is tested in package bench; these tests cover the
// command: flags, output, profiles, exit status.

func TestBenchCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	r := runCLI(t, nil, "bench", "--json", "-c", "2", "-duration", "300ms", "-warmup", "0", "-rounds", "1",
		"-redis-url", srv.URL(), "-cpuprofile", cpu, "-memprofile", mem)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q, want 0", r.code, r.stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout %q: not a JSON report: %v", r.stdout, err)
	}
	if rep.Concurrency != 2 || rep.Floor.Cycles == 0 || rep.Gateway.Cycles == 0 || rep.Ratio <= 0 {
		t.Errorf("got concurrency %d, cycles %d/%d, ratio %v; want 2, both > 0, ratio > 0",
			rep.Concurrency, rep.Floor.Cycles, rep.Gateway.Cycles, rep.Ratio)
	}
	for _, p := range []string{cpu, mem} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: got %v, want a non-empty file", p, err)
		}
	}
}

// TestBenchWaitersCommand: -waiters starts this binary as `leasegate
// serve` (TestMain runs main), parks a few waiting acquires on it, reads
// its memory and releases them all.
func TestBenchWaitersCommand(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	r := runCLI(t, nil, "bench", "--json", "-waiters", "20", "-redis-url", srv.URL(), "-log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q, want 0", r.code, r.stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout %q: not a JSON report: %v", r.stdout, err)
	}
	w := rep.Waiters
	if w == nil {
		t.Fatalf("report has no waiters measurement: %s", r.stdout)
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

// TestBenchCapacityCommand: -capacity starts its own redis-servers (one,
// then a Cluster of two masters) and this binary as two `leasegate
// serve` processes, runs every phase briefly and writes the model's
// inputs; the figures must be those of processes that did the work.
func TestBenchCapacityCommand(t *testing.T) {
	t.Parallel()
	r := runCLI(t, nil, "bench", "--json", "-capacity", "-topologies", "g2,c2", "-c", "4", "-duration", "200ms", "-warmup", "0",
		"-rounds", "1", "-redis-server", redistest.Binary(t), "-log-level", "warn")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q, want 0", r.code, r.stderr)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("stdout %q: not a JSON report: %v", r.stdout, err)
	}
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

func TestBenchCommandRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a duration above the cap", []string{"-duration", "6m"}, "duration"},
		{"a non-loopback Redis", []string{"-redis-url", "redis://192.0.2.1:6379"}, "loopback"},
		{"a stray argument", []string{"extra"}, "unexpected arguments"},
		{"a missing etcd program", []string{"-etcd", "-etcd-bench", "/nonexistent/etcd-bench"}, "etcd-bench"},
		{"waiters above the cap", []string{"-waiters", "20001"}, "waiters"},
		{"waiters with the hand-off phases", []string{"-waiters", "10", "-handoff"}, "measurement of its own"},
		{"a hand-off with one client", []string{"-handoff", "-c", "1"}, "at least 2 clients"},
		{"an unknown topology", []string{"-capacity", "-topologies", "g9"}, "g9"},
		{"capacity with a Redis of one's own", []string{"-capacity", "-redis-url", "redis://127.0.0.1:1"}, "measurement of its own"},
	} {
		t.Run(tc.name+" is a usage error", func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"bench"}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("got exit %d, stderr %q; want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestUsageListsBench(t *testing.T) {
	t.Parallel()
	if !strings.Contains(usage, "leasegate bench") {
		t.Errorf("usage text does not list the bench command:\n%s", usage)
	}
}
