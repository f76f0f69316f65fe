package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"
)

// LoadReport sums up a load run. `leasegate load` prints it with Print, or with
// --json as JSON.
type LoadReport struct {
	Scenario    Scenario `json:"scenario"`
	URL         string   `json:"url"`
	Concurrency int      `json:"concurrency"`
	Resources   int      `json:"resources"`
	TTLSeconds  int64    `json:"ttl_seconds"`
	StoppedBy   string   `json:"stopped_by"` // "duration", "requests" or "interrupted" (ctx ended)
	ElapsedSec  float64  `json:"elapsed_seconds"`

	Requests   int64            `json:"requests"`
	Successes  int64            `json:"successes"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"errors_by_kind"`
	Throughput float64          `json:"throughput_rps"`

	// Operations is keyed by operation: acquire, release, user-lock,
	// status (the last request of a run bounded by Requests that has no
	// room for an acquire+release pair).
	Operations map[string]OpStats `json:"operations"`

	Acquired  int64 `json:"acquired,omitempty"`
	Contended int64 `json:"contended,omitempty"`
	// CyclesPerSec is the acquire+release cycles a second of a lock run.
	CyclesPerSec float64 `json:"cycles_per_second,omitempty"`

	UserLocks *UserLockStats `json:"user_locks,omitempty"` // UserLock runs only
	Fencing   *FencingStats  `json:"fencing,omitempty"`    // lock runs only
}

// OpStats are the latencies of one operation, in milliseconds.
type OpStats struct {
	Count  int64   `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

// UserLockStats counts the answers of a UserLock run.
type UserLockStats struct {
	Acquired int64 `json:"acquired"`
	Repeated int64 `json:"repeated"`
	Flagged  int64 `json:"flagged_answers"`
}

// FencingStats is the fencing check of a lock run: Grants checked,
// Violations found, the first few of them described in Examples.
type FencingStats struct {
	Grants     int64    `json:"grants"`
	Violations int64    `json:"violations"`
	Examples   []string `json:"examples,omitempty"`
}

func (r *run) summarize(stats []*workerStats, elapsed time.Duration, stoppedBy string) *LoadReport {
	s := &LoadReport{
		Scenario: r.cfg.Scenario, URL: r.cfg.URL, Concurrency: r.cfg.Concurrency,
		Resources: r.cfg.Resources, TTLSeconds: int64(r.cfg.TTL / time.Second),
		StoppedBy: stoppedBy, ElapsedSec: elapsed.Seconds(),
		ErrorKinds: map[string]int64{}, Operations: map[string]OpStats{},
	}
	var hists [numOps]histogram
	var ul UserLockStats
	for _, w := range stats {
		for o := range hists {
			hists[o].merge(&w.hist[o])
		}
		s.Successes += w.successes
		for k, v := range w.errs {
			s.ErrorKinds[k] += v
			s.Errors += v
		}
		s.Acquired += w.acquired
		s.Contended += w.contended
		ul.Acquired += w.ulAcquired
		ul.Repeated += w.ulRepeated
		ul.Flagged += w.ulFlagged
	}
	s.Requests = s.Successes + s.Errors
	if elapsed > 0 {
		s.Throughput = float64(s.Requests) / elapsed.Seconds()
		s.CyclesPerSec = float64(s.Acquired) / elapsed.Seconds()
	}
	for o := operation(0); o < numOps; o++ {
		h := &hists[o]
		if h.n == 0 {
			continue
		}
		s.Operations[o.String()] = OpStats{
			Count:  h.n,
			MeanMS: ms(h.sum / time.Duration(h.n)),
			P50MS:  ms(h.quantile(0.50)),
			P90MS:  ms(h.quantile(0.90)),
			P99MS:  ms(h.quantile(0.99)),
			MaxMS:  ms(h.max),
		}
	}
	if r.cfg.Scenario == UserLock {
		s.UserLocks = &ul
	} else {
		r.tracker.mu.Lock()
		s.Fencing = &FencingStats{Grants: r.tracker.grants, Violations: r.tracker.violations, Examples: r.tracker.shown}
		r.tracker.mu.Unlock()
	}
	return s
}

// Print writes the report as `leasegate load` shows it: a few lines of
// totals, a table of latencies per operation, the fencing check.
func (s *LoadReport) Print(w io.Writer) {
	fmt.Fprintf(w, "leasegate load: %s, %d workers, %d resources, ttl %ds, %s\n",
		s.Scenario, s.Concurrency, s.Resources, s.TTLSeconds, s.URL)
	fmt.Fprintf(w, "stopped by %s after %.2fs\n\n", s.StoppedBy, s.ElapsedSec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "requests\t%d\t(successes %d, errors %d)\n", s.Requests, s.Successes, s.Errors)
	fmt.Fprintf(tw, "throughput\t%.1f req/s\t\n", s.Throughput)
	if s.UserLocks != nil {
		fmt.Fprintf(tw, "user locks\t%d acquired, %d repeated, %d flagged answers\t\n", s.UserLocks.Acquired, s.UserLocks.Repeated, s.UserLocks.Flagged)
	} else {
		fmt.Fprintf(tw, "acquired\t%d\t(%.1f cycles/s)\n", s.Acquired, s.CyclesPerSec)
		fmt.Fprintf(tw, "contended\t%d\t\n", s.Contended)
	}
	for _, k := range slices.Sorted(maps.Keys(s.ErrorKinds)) {
		fmt.Fprintf(tw, "error\t%d\t%s\n", s.ErrorKinds[k], k)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "operation\tcount\tmean ms\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for op := operation(0); op < numOps; op++ {
		o, ok := s.Operations[op.String()]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", op, o.Count, o.MeanMS, o.P50MS, o.P90MS, o.P99MS, o.MaxMS)
	}
	_ = tw.Flush()

	if f := s.Fencing; f != nil {
		fmt.Fprintf(w, "\nfencing check: %d violations in %d grants\n", f.Violations, f.Grants)
		for _, e := range f.Examples {
			fmt.Fprintln(w, "  violation:", e)
		}
	}
}
