package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/leasegate/leasegate/bench"
)

// The returning-clients phase (-returning N): every client is one owner
// that, each cycle, picks one of N resources at random (so sometimes the
// one it has just released), acquires it waiting (wait_ms 3000), holds it
// 1 ms and releases it: a worker loop of waiting acquires, the shape of
// issue 42 (docs/waiting.md, "Hand-off speed"). It is `leasegate load
// --scenario waiting` (bench.Load) on the round's gateway, warmed up and
// measured for the phase's times, so its figures compare with the load
// tool's: cycles/s are grants/s, p50/p99 are those of the acquire
// (request to answer, the wait included), and the load run's fencing
// check counts as errors. Its ratio is to the round's gateway phase (the
// same clients on free locks).

// returningName is the phase's name in the report.
const returningName = "returning"

// runReturning runs the phase once and returns it and the load run's
// report (for the acquire's max and the fencing check).
func runReturning(ctx context.Context, rig *bench.Rig, cfg Config) (bench.Phase, *bench.LoadReport, error) {
	lc := bench.DefaultLoadConfig()
	lc.URL = rig.Gateway.URL()
	lc.Scenario = bench.Waiting
	lc.Concurrency = cfg.Concurrency
	lc.Resources = cfg.Returning
	lc.TTL = cfg.TTL
	if cfg.Warmup > 0 {
		lc.Duration = cfg.Warmup
		if _, err := bench.Load(ctx, lc); err != nil {
			return bench.Phase{}, nil, err
		}
	}
	before, err := bench.ReadRedisStats(ctx, rig.Stats)
	if err != nil {
		return bench.Phase{}, nil, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, cpuOK := bench.ProcessCPU()
	lc.Duration = cfg.Duration
	lr, err := bench.Load(ctx, lc)
	if err != nil {
		return bench.Phase{}, nil, err
	}
	cpu1, _ := bench.ProcessCPU()
	runtime.ReadMemStats(&ms1)
	after, err := bench.ReadRedisStats(ctx, rig.Stats)
	if err != nil {
		return bench.Phase{}, nil, err
	}
	acq := lr.Operations["acquire"]
	p := bench.Phase{
		Name:         returningName,
		Cycles:       lr.Acquired,
		Errors:       lr.Errors + lr.Contended + lr.Fencing.Violations,
		Seconds:      lr.ElapsedSec,
		CyclesPerSec: lr.CyclesPerSec,
		P50ms:        acq.P50MS,
		P99ms:        acq.P99MS,
	}
	switch {
	case lr.Fencing.Violations > 0:
		p.FirstError = "fencing: " + lr.Fencing.Examples[0]
	case lr.Errors > 0:
		p.FirstError = fmt.Sprintf("errors by kind: %v", lr.ErrorKinds)
	case lr.Contended > 0:
		p.FirstError = fmt.Sprintf("%d acquires not granted within wait_ms", lr.Contended)
	}
	if p.Cycles > 0 {
		d := after.Sub(before)
		n := float64(p.Cycles)
		p.RedisCPUus = float64(d.CPU.Microseconds()) / n
		p.RedisCalls, p.RedisUsec = map[string]float64{}, map[string]float64{}
		for k, calls := range d.Calls {
			p.RedisCalls[k] = float64(calls) / n
			p.RedisUsec[k] = float64(d.Usec[k]) / n
		}
		// The gateway sends scripts (as the gateway phase's cycle).
		p.RedisCmdUs = p.RedisUsec["evalsha"] + p.RedisUsec["eval"]
		if cpuOK {
			p.ProcessCPUus = float64((cpu1 - cpu0).Microseconds()) / n
		}
		p.AllocsPerCycle = float64(ms1.Mallocs-ms0.Mallocs) / n
		p.BytesPerCycle = float64(ms1.TotalAlloc-ms0.TotalAlloc) / n
		p.GCCycles = ms1.NumGC - ms0.NumGC
	}
	return p, lr, nil
}

// printReturning gives the returning phase's acquire max and fencing
// check in each round.
func printReturning(w io.Writer, rounds []*bench.LoadReport) {
	if len(rounds) == 0 {
		return
	}
	r := rounds[0]
	fmt.Fprintf(w, "\nreturning: %d clients, each one owner, pick one of %d resources at random each cycle, acquire with wait_ms %d,\n",
		r.Concurrency, r.Resources, bench.DefaultLoadConfig().Wait.Milliseconds())
	fmt.Fprintln(w, "  hold 1 ms, release (leasegate load --scenario waiting); p50/p99 = the acquire, wait included. By round:")
	for i, r := range rounds {
		a := r.Operations["acquire"]
		fmt.Fprintf(w, "  %d: %.0f cycles/s, acquire p50 %.2f ms, p99 %.2f ms, max %.2f ms; %d grants fencing-checked, %d violations\n",
			i+1, r.CyclesPerSec, a.P50MS, a.P99MS, a.MaxMS, r.Fencing.Grants, r.Fencing.Violations)
	}
}
