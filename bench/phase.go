package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cycler does lock cycles: one acquire of a free resource and its release.
type Cycler interface {
	Name() string
	// Acquire and Release are the two halves of worker i's cycle.
	Acquire(ctx context.Context, i int) error
	Release(ctx context.Context, i int) error
	// Sends are the commands the cycler itself sends to Redis; the others
	// in commandstats run inside its scripts, and their time is already in
	// the script's (EVALSHA's usec includes the commands it calls).
	Sends() []string
}

// cycleOf is c's cycle: its acquire, then its release.
func cycleOf(ctx context.Context, c Cycler, i int) error {
	if err := c.Acquire(ctx, i); err != nil {
		return err
	}
	return c.Release(ctx, i)
}

// LatencyTaker is a Cycler that measures the latency it reports itself
// (a hand-off's release-to-next-holder) instead of each cycle's time.
type LatencyTaker interface {
	// TakeLatencies returns the latencies since the last call, nil when
	// the cycler measures none.
	TakeLatencies() []time.Duration
}

// RunPhase warms c up, then runs cfg.Concurrency workers doing cycles for
// cfg.Duration and measures them. prof, when not nil, gets a CPU profile
// of the measured part.
func RunPhase(ctx context.Context, stats *redis.Client, cfg Config, c Cycler, prof io.Writer) (Phase, error) {
	if cfg.Warmup > 0 {
		Drive(ctx, cfg.Concurrency, cfg.Warmup, c)
	}
	if ctx.Err() != nil {
		return Phase{}, ctx.Err()
	}
	before, err := ReadRedisStats(ctx, stats)
	if err != nil {
		return Phase{}, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, cpuOK := ProcessCPU()
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return Phase{}, fmt.Errorf("bench: cpuprofile: %w", err)
		}
	}
	res := Drive(ctx, cfg.Concurrency, cfg.Duration, c)
	if prof != nil {
		pprof.StopCPUProfile()
	}
	cpu1, _ := ProcessCPU()
	runtime.ReadMemStats(&ms1)
	after, err := ReadRedisStats(ctx, stats)
	if err != nil {
		return Phase{}, err
	}

	p := Phase{
		Name:       c.Name(),
		Cycles:     res.Cycles,
		Errors:     res.Errors,
		FirstError: res.FirstError,
		Seconds:    res.Elapsed.Seconds(),
	}
	if res.Cycles == 0 {
		return p, nil
	}
	n := float64(res.Cycles)
	p.CyclesPerSec = n / res.Elapsed.Seconds()
	p.P50ms = ms(res.Quantile(0.50))
	p.P99ms = ms(res.Quantile(0.99))
	d := after.Sub(before)
	p.RedisCPUus = us(d.CPU) / n
	p.RedisCalls = map[string]float64{}
	p.RedisUsec = map[string]float64{}
	for k, calls := range d.Calls {
		p.RedisCalls[k] = float64(calls) / n
		p.RedisUsec[k] = float64(d.Usec[k]) / n
	}
	for _, k := range c.Sends() {
		p.RedisCmdUs += p.RedisUsec[k]
	}
	if cpuOK {
		p.ProcessCPUus = us(cpu1-cpu0) / n
	}
	p.AllocsPerCycle = float64(ms1.Mallocs-ms0.Mallocs) / n
	p.BytesPerCycle = float64(ms1.TotalAlloc-ms0.TotalAlloc) / n
	p.GCCycles = ms1.NumGC - ms0.NumGC
	return p, nil
}

// DriveResult is what Drive measured.
type DriveResult struct {
	Cycles, Errors int64
	FirstError     string
	Elapsed        time.Duration
	latencies      *histogram
}

// Quantile is the latency at quantile q (0 < q <= 1) of a cycle, or of
// what the cycler measured itself (LatencyTaker).
func (r DriveResult) Quantile(q float64) time.Duration { return r.latencies.quantile(q) }

// Drive runs n workers doing cycles until d has passed (or ctx ends). A
// worker finishes the cycle it is in, so nothing is cut off half-way.
func Drive(ctx context.Context, n int, d time.Duration, c Cycler) DriveResult {
	own, hasOwn := c.(LatencyTaker)
	if hasOwn {
		own.TakeLatencies() // those before this drive
	}
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		res      DriveResult
		firstErr error
	)
	lats := make([]histogram, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("role", "driver", "phase", c.Name()), func(ctx context.Context) {
			defer wg.Done()
			var l histogram
			var errs int64
			var first error
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				if err := cycleOf(ctx, c, i); err != nil {
					errs++
					if first == nil {
						first = err
					}
					continue
				}
				l.record(time.Since(t0))
			}
			lats[i] = l
			mu.Lock()
			res.Errors += errs
			if firstErr == nil {
				firstErr = first
			}
			mu.Unlock()
		})
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.latencies = &histogram{}
	for i := range lats {
		res.latencies.merge(&lats[i])
	}
	res.Cycles = res.latencies.n
	if firstErr != nil {
		res.FirstError = firstErr.Error()
	}
	if hasOwn {
		if l := own.TakeLatencies(); l != nil {
			res.latencies = &histogram{}
			for _, d := range l {
				res.latencies.record(d)
			}
		}
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// ScriptCommands counts the Redis commands of each half of a cycle, done
// once and alone, for both sides: which commands each script runs.
func ScriptCommands(ctx context.Context, stats *redis.Client, cs ...Cycler) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	for _, c := range cs {
		// One cycle first: script cache loaded, connections open.
		if err := cycleOf(ctx, c, 0); err != nil {
			return nil, fmt.Errorf("bench: %s: first cycle: %w", c.Name(), err)
		}
		for _, half := range []struct {
			name string
			do   func(context.Context, int) error
		}{{"acquire", c.Acquire}, {"release", c.Release}} {
			before, err := ReadRedisStats(ctx, stats)
			if err != nil {
				return nil, err
			}
			if err := half.do(ctx, 0); err != nil {
				return nil, fmt.Errorf("bench: %s %s: %w", c.Name(), half.name, err)
			}
			after, err := ReadRedisStats(ctx, stats)
			if err != nil {
				return nil, err
			}
			out[c.Name()+" "+half.name] = after.Sub(before).Calls
		}
	}
	return out, nil
}
