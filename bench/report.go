package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of a run. Times per cycle are in microseconds,
// latencies in milliseconds.
type Report struct {
	Concurrency  int           `json:"concurrency"`
	Duration     time.Duration `json:"duration_ns"`
	GoVersion    string        `json:"go_version"`
	GOMAXPROCS   int           `json:"gomaxprocs"`
	NumCPU       int           `json:"num_cpu"`
	RedisVersion string        `json:"redis_version"`

	// Round is the medians over the rounds, field by field (a ratio is
	// the median of the rounds' own ratios; Phases are matched by name).
	Round
	Rounds []Round `json:"rounds"`

	// Scripts: the Redis commands (as INFO commandstats counts them,
	// commands inside a script included) of each half of one cycle, done
	// alone: "floor acquire", "gateway release", ...
	Scripts map[string]map[string]int64 `json:"scripts"`
	Notes   []string                    `json:"notes,omitempty"`
}

// Round is one floor phase and the bare and gateway phases right after
// it. Ratio is gateway/floor cycles/s, BareRatio bare/floor, OverBare
// gateway/bare.
type Round struct {
	Floor     Phase   `json:"floor"`
	Bare      Phase   `json:"bare"`
	Gateway   Phase   `json:"gateway"`
	Ratio     float64 `json:"ratio"`
	BareRatio float64 `json:"bare_ratio"`
	OverBare  float64 `json:"gateway_over_bare"`
	// Phases are the more phases that ran after them (the maintainers'
	// tooling, tools/bench), in order.
	Phases []Phase `json:"phases,omitempty"`
}

// Phase is what one phase measured.
type Phase struct {
	Name         string  `json:"name"`
	Cycles       int64   `json:"cycles"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
	Seconds      float64 `json:"seconds"`
	CyclesPerSec float64 `json:"cycles_per_sec"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`

	// RedisCPUus is Redis's used_cpu_sys+used_cpu_user per cycle (I/O,
	// parsing and the event loop included); RedisCmdUs the time inside the
	// commands the phase sends (commandstats usec; a script's includes the
	// commands it calls); RedisCalls and RedisUsec the commandstats calls
	// and usec per cycle by command, commands called by scripts included.
	RedisCPUus float64            `json:"redis_cpu_us_per_cycle"`
	RedisCmdUs float64            `json:"redis_cmd_us_per_cycle"`
	RedisCalls map[string]float64 `json:"redis_calls_per_cycle"`
	RedisUsec  map[string]float64 `json:"redis_usec_per_cycle"`

	// ProcessCPUus is this process's CPU (getrusage) per cycle: the
	// driver alone in the floor phase; driver and gateway together in the
	// gateway phase. AllocsPerCycle and BytesPerCycle are the process's
	// heap allocations, counted the same way.
	ProcessCPUus   float64 `json:"process_cpu_us_per_cycle"`
	AllocsPerCycle float64 `json:"allocs_per_cycle"`
	BytesPerCycle  float64 `json:"bytes_per_cycle"`
	GCCycles       uint32  `json:"gc_cycles"`

	// An optional phase's cycles/s divided by those of the phase named
	// ComparedTo in the same round (its floor); the floors have none.
	ComparedTo string  `json:"compared_to,omitempty"`
	Ratio      float64 `json:"ratio,omitempty"`
	// CPURatio is ProcessCPUus divided by that of ComparedTo in the same
	// round: for the lock-set phase, its cycle's gateway CPU (with the
	// HTTP driver's) against the single-lock cycle's.
	CPURatio float64 `json:"cpu_ratio,omitempty"`
}

// summarize fills Floor, Gateway and Ratio from the rounds.
func (r *Report) summarize() {
	pick := func(f func(Round) Phase) Phase {
		var ps []Phase
		for _, rd := range r.Rounds {
			ps = append(ps, f(rd))
		}
		return medianPhase(ps)
	}
	r.Floor = pick(func(rd Round) Phase { return rd.Floor })
	r.Bare = pick(func(rd Round) Phase { return rd.Bare })
	r.Gateway = pick(func(rd Round) Phase { return rd.Gateway })
	r.Ratio = MedianBy(r.Rounds, func(rd Round) float64 { return rd.Ratio })
	r.BareRatio = MedianBy(r.Rounds, func(rd Round) float64 { return rd.BareRatio })
	r.OverBare = MedianBy(r.Rounds, func(rd Round) float64 { return rd.OverBare })
	r.Phases = medianPhases(r.Rounds)
}

// medianPhase: every number is the median of that number over ps; errors
// and cycles are summed, the calls are the last round's (they do not vary).
func medianPhase(ps []Phase) Phase {
	m := func(f func(Phase) float64) float64 { return MedianBy(ps, f) }
	last := ps[len(ps)-1]
	out := Phase{
		Name:           last.Name,
		ComparedTo:     last.ComparedTo,
		Ratio:          m(func(p Phase) float64 { return p.Ratio }),
		CPURatio:       m(func(p Phase) float64 { return p.CPURatio }),
		Seconds:        m(func(p Phase) float64 { return p.Seconds }),
		CyclesPerSec:   m(func(p Phase) float64 { return p.CyclesPerSec }),
		P50ms:          m(func(p Phase) float64 { return p.P50ms }),
		P99ms:          m(func(p Phase) float64 { return p.P99ms }),
		RedisCPUus:     m(func(p Phase) float64 { return p.RedisCPUus }),
		RedisCmdUs:     m(func(p Phase) float64 { return p.RedisCmdUs }),
		RedisCalls:     last.RedisCalls,
		RedisUsec:      last.RedisUsec,
		ProcessCPUus:   m(func(p Phase) float64 { return p.ProcessCPUus }),
		AllocsPerCycle: m(func(p Phase) float64 { return p.AllocsPerCycle }),
		BytesPerCycle:  m(func(p Phase) float64 { return p.BytesPerCycle }),
	}
	for _, p := range ps {
		out.Cycles += p.Cycles
		out.Errors += p.Errors
		out.GCCycles += p.GCCycles
		if out.FirstError == "" {
			out.FirstError = p.FirstError
		}
	}
	return out
}

// Print writes the report as text tables.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "leasegate bench: %d clients, %v per phase, %d round(s), median shown\n", r.Concurrency, r.Duration, len(r.Rounds))
	fmt.Fprintf(w, "%s, GOMAXPROCS=%d, %d CPUs, redis-server %s\n\n", r.GoVersion, r.GOMAXPROCS, r.NumCPU, r.RedisVersion)
	tw := newTable(w)
	fmt.Fprintln(tw, "phase\tcycles/s\tp50 ms\tp99 ms\tratio\tredis cpu\tredis cmd\tredis cmds\tproc cpu\tallocs\tbytes\terrors\t")
	row := func(p Phase, ratio float64) {
		var calls float64
		for _, n := range p.RedisCalls {
			calls += n
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%.2f\t%.1fµs\t%.1fµs\t%.1f\t%.1fµs\t%.0f\t%.0f\t%d\t\n",
			p.Name, p.CyclesPerSec, p.P50ms, p.P99ms, ratio, p.RedisCPUus, p.RedisCmdUs, calls, p.ProcessCPUus, p.AllocsPerCycle, p.BytesPerCycle, p.Errors)
	}
	row(r.Floor, 1)
	row(r.Bare, r.BareRatio)
	row(r.Gateway, r.Ratio)
	for _, p := range r.Phases {
		row(p, p.Ratio)
	}
	_ = tw.Flush()
	for _, p := range r.Phases {
		if p.CPURatio > 0 {
			fmt.Fprintf(w, "\n%s: proc cpu per cycle %.2fx the %s phase's (median of the rounds' ratios)\n", p.Name, p.CPURatio, p.ComparedTo)
		}
	}
	fmt.Fprintf(w, "\nleasegate ÷ bare HTTP gateway: %.2f (cycles/s, median of the rounds' ratios; ratio column: to the floor)\n", r.OverBare)
	fmt.Fprintln(w, "bare http: POST/DELETE /locks/{r} on net/http + encoding/json, SET NX PX and EVALSHA compare-and-delete, nothing else")
	fmt.Fprintln(w, "per cycle: redis cpu = INFO used_cpu_sys+user; redis cmd = commandstats usec of the commands sent;")
	fmt.Fprintln(w, "proc cpu/allocs/bytes = this process (floor: the go-redis driver; gateway: HTTP driver + gateway)")

	if len(r.Rounds) > 1 {
		fmt.Fprintln(w, "\nrounds (cycles/s floor, bare http, gateway; gateway ÷ bare):")
		for i, rd := range r.Rounds {
			fmt.Fprintf(w, "  %d: %.0f, %.0f, %.0f; %.3f\n", i+1, rd.Floor.CyclesPerSec, rd.Bare.CyclesPerSec, rd.Gateway.CyclesPerSec, rd.OverBare)
		}
	}
	fmt.Fprintln(w, "\nredis commands per cycle (commandstats calls; then usec, a script's including its commands'):")
	for _, p := range append([]Phase{r.Floor, r.Bare, r.Gateway}, r.Phases...) {
		fmt.Fprintf(w, "  %-9s %s\n", p.Name, formatCalls(p.RedisCalls))
		fmt.Fprintf(w, "  %-9s %s\n", "", formatCalls(p.RedisUsec))
	}
	fmt.Fprintln(w, "redis commands of one half-cycle, done alone:")
	for _, k := range slices.Sorted(maps.Keys(r.Scripts)) {
		calls := map[string]float64{}
		for c, n := range r.Scripts[k] {
			calls[c] = float64(n)
		}
		fmt.Fprintf(w, "  %-16s %s\n", k, formatCalls(calls))
	}
	for _, p := range append([]Phase{r.Floor, r.Bare, r.Gateway}, r.Phases...) {
		if p.FirstError != "" {
			fmt.Fprintf(w, "%s: first error: %s\n", p.Name, p.FirstError)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}

// newTable is the one table style of the text reports (Run's phases, the
// etcd phases, the waiters' memory, Load's operations): columns two
// spaces apart, aligned right. End every cell, the last one too, with \t.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

// WriteReport writes rep (a *Report or a *LoadReport) as `leasegate
// bench` and `leasegate load` show it: its text (Print), or with asJSON
// the report as indented JSON.
func WriteReport(w io.Writer, rep interface{ Print(io.Writer) }, asJSON bool) error {
	if !asJSON {
		rep.Print(w)
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func formatCalls(calls map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, calls[k]))
	}
	return strings.Join(parts, " ")
}

// medianPhases is the median of the rounds' optional phases, by name, in
// the order of the first round.
func medianPhases(rounds []Round) []Phase {
	if len(rounds) == 0 {
		return nil
	}
	var out []Phase
	for _, first := range rounds[0].Phases {
		var ps []Phase
		for _, rd := range rounds {
			for _, p := range rd.Phases {
				if p.Name == first.Name {
					ps = append(ps, p)
				}
			}
		}
		out = append(out, medianPhase(ps))
	}
	return out
}
