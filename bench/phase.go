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

// cycler does lock cycles: one acquire of a free resource and its release.
type cycler interface {
	name() string
	// acquire and release are the two halves of worker i's cycle.
	acquire(ctx context.Context, i int) error
	release(ctx context.Context, i int) error
	// sends are the commands the cycler itself sends to Redis; the others
	// in commandstats run inside its scripts, and their time is already in
	// the script's (EVALSHA's usec includes the commands it calls).
	sends() []string
}

// cycleOf is c's cycle: its acquire, then its release.
func cycleOf(ctx context.Context, c cycler, i int) error {
	if err := c.acquire(ctx, i); err != nil {
		return err
	}
	return c.release(ctx, i)
}

// ownLatencies is a cycler that may measure the latency it reports itself
// (a hand-off's release-to-next-holder) instead of each cycle's time.
type ownLatencies interface {
	// takeLatencies returns the latencies since the last call, nil when
	// the cycler measures none.
	takeLatencies() *histogram
}

// runPhase warms c up, then runs cfg.Concurrency workers doing cycles for
// cfg.Duration and measures them. prof, when not nil, gets a CPU profile
// of the measured part.
func runPhase(ctx context.Context, stats *redis.Client, cfg Config, c cycler, prof io.Writer) (Phase, error) {
	if cfg.Warmup > 0 {
		drive(ctx, cfg.Concurrency, cfg.Warmup, c)
	}
	if ctx.Err() != nil {
		return Phase{}, ctx.Err()
	}
	own, hasOwn := c.(ownLatencies)
	if hasOwn {
		own.takeLatencies() // the warm-up's
	}
	before, err := readRedisStats(ctx, stats)
	if err != nil {
		return Phase{}, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0, cpuOK := processCPU()
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return Phase{}, fmt.Errorf("bench: cpuprofile: %w", err)
		}
	}
	res := drive(ctx, cfg.Concurrency, cfg.Duration, c)
	if prof != nil {
		pprof.StopCPUProfile()
	}
	if hasOwn {
		if l := own.takeLatencies(); l != nil {
			res.latencies = l
		}
	}
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&ms1)
	after, err := readRedisStats(ctx, stats)
	if err != nil {
		return Phase{}, err
	}

	p := Phase{
		Name:       c.name(),
		Cycles:     res.cycles,
		Errors:     res.errors,
		FirstError: res.firstError,
		Seconds:    res.elapsed.Seconds(),
	}
	if res.cycles == 0 {
		return p, nil
	}
	n := float64(res.cycles)
	p.CyclesPerSec = n / res.elapsed.Seconds()
	p.P50ms = ms(res.latencies.quantile(0.50))
	p.P99ms = ms(res.latencies.quantile(0.99))
	d := after.sub(before)
	p.RedisCPUus = us(d.cpu) / n
	p.RedisCalls = map[string]float64{}
	p.RedisUsec = map[string]float64{}
	for k, calls := range d.calls {
		p.RedisCalls[k] = float64(calls) / n
		p.RedisUsec[k] = float64(d.usec[k]) / n
	}
	for _, k := range c.sends() {
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

type driveResult struct {
	cycles, errors int64
	firstError     string
	elapsed        time.Duration
	latencies      *histogram
}

// drive runs n workers doing cycles until d has passed (or ctx ends). A
// worker finishes the cycle it is in, so nothing is cut off half-way.
func drive(ctx context.Context, n int, d time.Duration, c cycler) driveResult {
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		res      driveResult
		firstErr error
	)
	lats := make([]histogram, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go pprof.Do(ctx, pprof.Labels("role", "driver", "phase", c.name()), func(ctx context.Context) {
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
			res.errors += errs
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
	res.elapsed = time.Since(start)
	res.latencies = &histogram{}
	for i := range lats {
		res.latencies.merge(&lats[i])
	}
	res.cycles = res.latencies.n
	if firstErr != nil {
		res.firstError = firstErr.Error()
	}
	return res
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// scriptCommands counts the Redis commands of each half of a cycle, done
// once and alone, for both sides: which commands each script runs.
func scriptCommands(ctx context.Context, stats *redis.Client, cs ...cycler) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	for _, c := range cs {
		// One cycle first: script cache loaded, connections open.
		if err := cycleOf(ctx, c, 0); err != nil {
			return nil, fmt.Errorf("bench: %s: first cycle: %w", c.name(), err)
		}
		for _, half := range []struct {
			name string
			do   func(context.Context, int) error
		}{{"acquire", c.acquire}, {"release", c.release}} {
			before, err := readRedisStats(ctx, stats)
			if err != nil {
				return nil, err
			}
			if err := half.do(ctx, 0); err != nil {
				return nil, fmt.Errorf("bench: %s %s: %w", c.name(), half.name, err)
			}
			after, err := readRedisStats(ctx, stats)
			if err != nil {
				return nil, err
			}
			out[c.name()+" "+half.name] = after.sub(before).calls
		}
	}
	return out, nil
}
