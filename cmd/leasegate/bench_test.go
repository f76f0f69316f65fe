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
	if rep.Concurrency != 2 || rep.Floor.Cycles == 0 || rep.Bare.Cycles == 0 || rep.Gateway.Cycles == 0 || rep.OverBare <= 0 {
		t.Errorf("got concurrency %d, cycles %d/%d/%d, gateway over bare %v; want 2, all > 0, ratio > 0",
			rep.Concurrency, rep.Floor.Cycles, rep.Bare.Cycles, rep.Gateway.Cycles, rep.OverBare)
	}
	for _, p := range []string{cpu, mem} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("profile %s: got %v, want a non-empty file", p, err)
		}
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
		{"a maintainers' tooling flag", []string{"-capacity"}, "-capacity"},
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
