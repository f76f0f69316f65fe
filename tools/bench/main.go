// Command bench is the maintainers' measurement tooling of leasegate, a
// module of its own so that none of it ships in the product binary:
//
//   - the rounds of `leasegate bench` (the go-redis floor and the
//     gateway's lock cycle, package bench of the product) with more
//     phases beside them: -handoff, -returning, -primitives, -locksets,
//     -tracing, and
//     etcd's own lock recipe (-etcd, the program of ./etcd);
//   - -waiters N: a `leasegate serve` process's memory with N waiting
//     acquires;
//   - -capacity: what each kind of cycle costs every process of a fleet,
//     the capacity model's input, and -capacity-from/-capacity-doc, which
//     print its tables or rewrite docs/capacity.md's.
//
// Run it from this directory (go run . -h); docs/benchmarks.md and
// docs/capacity.md record its figures. The gateway processes it starts
// are cmd/leasegate built from the repository (-gateway names a built one).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/launch"
)

//go:generate go run . -capacity-from testdata/capacity.json -capacity-doc ../../docs/capacity.md

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// usageError is a bad command line.
type usageError struct{ error }

// Config is one run of the tooling: the product bench's Config and what
// the tooling adds to it.
type Config struct {
	bench.Config

	// Etcd asks for the etcd phases (etcd.go): etcd's concurrency.Mutex
	// measured by the program of EtcdBench, a module directory (built
	// with go build) or a built binary; empty looks for DefaultEtcdBench
	// under the working directory, and skips with a note when there is
	// none. EtcdEndpoints, when set, is an etcd to use instead of the
	// program's embedded server.
	Etcd          bool
	EtcdBench     string
	EtcdEndpoints string

	// Handoff adds, to every round, the waiting hand-off of one resource
	// between all clients and its raw-Redis floor (handoff.go);
	// Primitives the semaphore and claim cycles (primitives.go); LockSets
	// the lock-set cycle (a set of 8, locksets.go); Tracing the lock
	// cycle on two more gateways with tracing on, sampling 100 % and 1 %
	// (tracing.go).
	Handoff, Primitives, LockSets, Tracing bool
	// Returning, when above 0, adds the returning-clients phase over that
	// many resources (returning.go): each client waits for a random one
	// of them each cycle, sometimes the one it has just released.
	Returning int
	// Waiters, when above 0, makes the run a measurement of its own
	// instead of the rounds: the RSS of a `leasegate serve` process
	// (GatewayCommand, with GatewayEnv added to the environment) holding
	// that many waiting acquires (waiters.go).
	Waiters int
	// Capacity, when true, makes the run the capacity measurement
	// (capacity.go) instead of the rounds: gateway processes started with
	// GatewayCommand, on Redis nodes it starts with RedisServer, for each
	// of CapacityTopologies (names of Topologies; empty: all).
	Capacity           bool
	CapacityTopologies []string
	GatewayCommand     string
	GatewayEnv         []string
}

// Report is a run's report: the product bench's, and the tooling's
// measurements.
type Report struct {
	bench.Report
	// Waiters is the -waiters measurement, which runs instead of rounds.
	Waiters *WaitersReport `json:"waiters,omitempty"`
	// Capacity is the -capacity measurement, which runs instead of
	// rounds; its JSON is the capacity model's input (capacitymodel.go).
	Capacity *CapacityReport `json:"capacity,omitempty"`
	// Etcd is the etcd side (-etcd), nil when it did not run.
	Etcd *EtcdResult `json:"etcd,omitempty"`
	// Returning is the returning phase's load report of each round
	// (-returning): the acquire's max and the fencing check.
	Returning []*bench.LoadReport `json:"returning,omitempty"`
}

// Print writes the report as text tables.
func (r *Report) Print(w io.Writer) {
	switch {
	case r.Waiters != nil:
		r.printWaiters(w)
	case r.Capacity != nil:
		r.Capacity.Print(w)
	default:
		r.Report.Print(w)
		printPhases(w, &r.Report)
		printReturning(w, r.Returning)
		r.Etcd.print(w)
	}
}

// DefaultConfig returns the defaults: those of `leasegate bench`, no
// more phase.
func DefaultConfig() Config { return Config{Config: bench.DefaultConfig()} }

// run parses args and runs what they ask for.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	var jsonOut bool
	var capFrom, capDoc, cpuProfile string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.Config.Flags(fs)
	fs.StringVar(&cfg.GatewayCommand, "gateway", cfg.GatewayCommand, "with -waiters or -capacity: the leasegate binary to run as `leasegate serve` (default: built from the repository)")
	fs.BoolVar(&cfg.Etcd, "etcd", cfg.Etcd, "also run the etcd phases (etcd's concurrency.Mutex: lock cycle and hand-off)")
	fs.StringVar(&cfg.EtcdBench, "etcd-bench", cfg.EtcdBench, "the etcd program: its module directory (built with go build) or a built binary; empty: ./"+DefaultEtcdBench+" if there, else the phase is skipped")
	fs.StringVar(&cfg.EtcdEndpoints, "etcd-endpoints", cfg.EtcdEndpoints, "comma-separated client URLs of an otherwise idle etcd to use instead of the embedded one")
	fs.BoolVar(&cfg.Tracing, "tracing", cfg.Tracing, "also run the lock cycle with tracing on, sampling 100 % and 1 %, exported over OTLP/HTTP to a local sink")
	fs.BoolVar(&cfg.Handoff, "handoff", cfg.Handoff, "also run the waiting hand-off phases (one resource, every client waiting)")
	fs.IntVar(&cfg.Returning, "returning", cfg.Returning, "also run the returning-clients phase over this many resources (each client waits for a random one each cycle, holds it 1 ms; 0: off)")
	fs.BoolVar(&cfg.Primitives, "primitives", cfg.Primitives, "also run the semaphore and claim cycle phases")
	fs.BoolVar(&cfg.LockSets, "locksets", cfg.LockSets, "also run the lock-set cycle phase (a set of 8, compared with the single-lock gateway cycle)")
	fs.IntVar(&cfg.Waiters, "waiters", cfg.Waiters, fmt.Sprintf("instead of the rounds, measure a leasegate serve process's memory with this many waiting acquires (at most %d)", MaxWaiters))
	fs.BoolVar(&cfg.Capacity, "capacity", cfg.Capacity, "instead of the rounds, measure the cost per cycle of every phase on each topology (docs/capacity.md)")
	fs.Func("topologies", "with -capacity: comma-separated topologies among g1,u1,g2,g3,c1,c2,c3 (default all)", func(s string) error {
		cfg.CapacityTopologies = strings.Split(s, ",")
		return nil
	})
	fs.StringVar(&capFrom, "capacity-from", capFrom, "print the capacity tables from this -capacity -json report, measuring nothing")
	fs.StringVar(&capDoc, "capacity-doc", capDoc, "with -capacity-from: rewrite this page's generated capacity tables")
	fs.BoolVar(&jsonOut, "json", jsonOut, "print the report as JSON")
	fs.StringVar(&cpuProfile, "cpuprofile", cpuProfile, "write a CPU profile of the last round's gateway phase to this file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	if capFrom != "" {
		return capacityTables(capFrom, capDoc, stdout)
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.CPUProfile = f
	}
	if (cfg.Waiters > 0 || cfg.Capacity) && cfg.GatewayCommand == "" {
		dir, err := os.MkdirTemp("", "leasegate-tools-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if cfg.GatewayCommand, err = launch.BuildGateway(dir, false); err != nil {
			return err
		}
	}
	rep, err := Run(ctx, cfg)
	if rep == nil {
		return err
	}
	if werr := bench.WriteReport(stdout, rep, jsonOut); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return err
	}
	return rep.failures()
}

// failures is an error when a cycle, an etcd operation or a waiter failed.
func (r *Report) failures() error {
	n := r.Floor.Errors + r.Bare.Errors + r.Gateway.Errors
	for _, p := range r.Phases {
		n += p.Errors
	}
	if c := r.Capacity; c != nil {
		for _, t := range c.Topologies {
			for _, p := range t.Phases {
				n += p.Errors
			}
		}
	}
	if n > 0 {
		return fmt.Errorf("%d cycles failed", n)
	}
	if n := r.Etcd.Failures(); n > 0 {
		return fmt.Errorf("%d etcd operations failed or broke mutual exclusion", n)
	}
	if w := r.Waiters; w != nil && (w.Errors > 0 || w.TimedOut > 0) {
		return fmt.Errorf("%d waiters failed, %d timed out", w.Errors, w.TimedOut)
	}
	return nil
}

// Validate checks the product's bounds and the tooling's phases.
func (c Config) Validate() error {
	errs := []error{c.Config.Validate()}
	if c.EtcdBench != "" {
		if _, err := os.Stat(c.EtcdBench); err != nil {
			errs = append(errs, fmt.Errorf("etcd-bench: %w", err))
		}
	}
	return errors.Join(append(errs, c.validatePhases()...)...)
}

// Run runs what cfg asks for and returns the report. The rounds stop
// early, with those done so far, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	runID := fmt.Sprintf("%x", time.Now().UnixNano())
	if cfg.Capacity {
		capRep, err := runCapacity(ctx, cfg, runID)
		if err != nil {
			return nil, err
		}
		return &Report{Capacity: capRep}, nil
	}
	rig, err := bench.Open(ctx, cfg.Config, runID)
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	br, err := rig.NewReport(ctx)
	if err != nil {
		return nil, err
	}
	rep := &Report{Report: *br}
	if cfg.Waiters > 0 {
		if rep.Waiters, err = runWaiters(ctx, cfg, rig.RedisURL, runID); err != nil {
			return nil, err
		}
		return rep, nil
	}
	var etcd *etcdRunner // nil: no etcd phases
	if cfg.Etcd {
		if etcd, err = startEtcd(ctx, cfg, rep); err != nil {
			return nil, err
		}
		defer etcd.close()
	}
	extras, err := newExtras(ctx, rig, cfg, runID)
	if err != nil {
		return nil, err
	}
	defer extras.close()
	if rep.Scripts, err = bench.ScriptCommands(ctx, rig.Stats, append([]bench.Cycler{rig.Floor, rig.Bare, rig.Locks}, extras.cyclers()...)...); err != nil {
		return nil, err
	}
	err = rig.Rounds(ctx, &rep.Report, func(ctx context.Context, prof io.Writer) (bench.Round, error) {
		return runRound(ctx, rig, cfg, extras, etcd, prof)
	})
	if err != nil {
		return nil, err
	}
	rep.Returning = extras.returning
	rep.Etcd.summarize()
	return rep, nil
}

// runRound runs one round: the product's (floor, gateway), the more
// phases and etcd's.
func runRound(ctx context.Context, rig *bench.Rig, cfg Config, extras *extras, etcd *etcdRunner, prof io.Writer) (bench.Round, error) {
	rd, err := rig.Round(ctx, prof)
	if err != nil {
		return rd, err
	}
	if rd.Phases, err = extras.run(ctx, rig, cfg, rd.Floor, rd.Gateway); err != nil {
		return rd, err
	}
	var handoffs float64
	for _, p := range rd.Phases {
		if p.Name == "handoff" {
			handoffs = p.CyclesPerSec
		}
	}
	return rd, etcd.round(rd.Gateway.CyclesPerSec, handoffs)
}

// capacityTables prints the capacity tables of the report at from, or
// with doc rewrites that page's generated tables.
func capacityTables(from, doc string, stdout io.Writer) error {
	rep, err := ReadCapacity(from)
	if err != nil {
		return err
	}
	if doc == "" {
		rep.Print(stdout)
		return nil
	}
	old, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	page, err := rep.UpdateDoc(string(old))
	if err != nil {
		return err
	}
	return os.WriteFile(doc, []byte(page), 0o644)
}

// newTable is the table style of the product's text reports: columns
// two spaces apart, aligned right. End every cell, the last one too,
// with \t.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
