package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/leasegate/leasegate/bench"
)

const benchUsage = `Usage: leasegate bench [flags]

Measures a lock cycle (acquire a free resource, release it) side by side,
in one run, at the same concurrency and for the same time per round:

  floor    the two steps done directly with go-redis:
           SET key owner NX PX ttl, then EVALSHA compare-and-delete
  gateway  POST /locks/{r} + DELETE /locks/{r} over loopback HTTP (keep-alive)
           to a gateway started in this process on 127.0.0.1:0

against one redis-server started on a free loopback port with --save ""
--appendonly no (or the loopback --redis-url, which must be otherwise
idle: its INFO counters are read). Prints, per phase, the median over the
rounds of cycles/s, p50/p99 latency, the gateway/floor ratio, Redis CPU
and commands per cycle (INFO cpu, INFO commandstats), and this process's
CPU and allocations per cycle (the load driver runs in this process: the
floor phase shows what the driver alone costs; see docs/benchmarks.md).
Stops by itself: at most 5m per phase.

With -etcd each round also measures etcd's own lock recipe
(client/v3/concurrency.Mutex) at the same concurrency and times, with the
program of the module bench/etcd (its own go.mod, so the gateway does not
depend on etcd), built with go build from -etcd-bench DIR or run as a
built -etcd-bench BINARY; by default ./bench/etcd, i.e. run from the
repository's root, else the phase is skipped with a note. It starts an
embedded etcd (one member, temporary directory, WAL fsynced as etcd does
by default) on free loopback ports, or uses -etcd-endpoints:

  etcd lock     each client Lock+Unlock of a mutex of its own (one shared
                session); cycles/s and the gateway/etcd ratio
  etcd handoff  every client takes turns on ONE mutex (a session each);
                hand-offs/s and release-to-next-holder p50/p99, from
                Unlock returning to the next Lock returning

-handoff adds two phases to every round: all clients wait on ONE
resource (POST /locks/{r} with wait_ms, DELETE when granted), and the
same hand-off done with go-redis (BLPOP a token, LPUSH it back), with
hand-offs/s and release-to-next-holder latency. -primitives adds the
semaphore (POST+DELETE /semaphores/{n}) and claim (POST /claims/{s}/{k} +
.../complete) cycles, compared with the floor. -waiters N measures instead
the memory of a separate "leasegate serve" process holding N waiting
acquires (VmRSS, VmHWM, Go heap and stacks), then releases them all.

-capacity measures instead what each kind of cycle costs every process
that serves it (lock, handoff, sem, set8, election, userlock), on fleets
of "leasegate serve" processes it starts: 1, 2 and 3 gateways on one
redis-server (g1 g2 g3), one there with --no-auto-pipeline (u1), and one
gateway on a Redis Cluster of 1, 2 and 3 masters (c1 c2 c3; -topologies
picks some). Per cycle: CPU of the
gateways, each Redis node and the load generator, bytes on the wire,
Redis commands and MOVED redirects; per topology, Redis memory per held
lock and per waiter. It prints the tables of docs/capacity.md; with -json
the report is the capacity model's input. -capacity-from FILE prints the
tables from such a JSON report, and with -capacity-doc PAGE rewrites the
page's generated tables in place.

Flags:
`

// cmdBench runs `leasegate bench`: flags into a bench.Config, the run, the
// report on stdout.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg := bench.DefaultConfig()
	var jsonOut bool
	var cpuProfile, memProfile string
	fs := flag.NewFlagSet("leasegate bench", flag.ContinueOnError)
	fs.IntVar(&cfg.Concurrency, "c", cfg.Concurrency, "concurrent clients, in both phases")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured time of each phase of each round, at most "+bench.MaxDuration.String())
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured time before each phase")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of floor then gateway; the median is reported")
	fs.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "lease of every lock, whole seconds")
	fs.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "use this loopback Redis instead of starting redis-server")
	fs.StringVar(&cfg.RedisServer, "redis-server", cfg.RedisServer, "redis-server binary to start")
	fs.StringVar(&cfg.GatewayLogLevel, "log-level", cfg.GatewayLogLevel, "the gateway's log level (its lines are encoded, then discarded)")
	fs.BoolVar(&cfg.Etcd, "etcd", cfg.Etcd, "also run the etcd phases (etcd's concurrency.Mutex: lock cycle and hand-off)")
	fs.StringVar(&cfg.EtcdBench, "etcd-bench", cfg.EtcdBench, "the etcd program: its module directory (built with go build) or a built binary; empty: ./"+bench.DefaultEtcdBench+" if there, else the phase is skipped")
	fs.StringVar(&cfg.EtcdEndpoints, "etcd-endpoints", cfg.EtcdEndpoints, "comma-separated client URLs of an otherwise idle etcd to use instead of the embedded one")
	fs.BoolVar(&cfg.Tracing, "tracing", cfg.Tracing, "also run the lock cycle with tracing on, sampling 100 % and 1 %, exported over OTLP/HTTP to a local sink")
	fs.BoolVar(&cfg.Handoff, "handoff", cfg.Handoff, "also run the waiting hand-off phases (one resource, every client waiting)")
	fs.BoolVar(&cfg.Primitives, "primitives", cfg.Primitives, "also run the semaphore and claim cycle phases")
	fs.BoolVar(&cfg.LockSets, "locksets", cfg.LockSets, "also run the lock-set cycle phase (a set of 8, compared with the single-lock gateway cycle)")
	fs.IntVar(&cfg.Waiters, "waiters", cfg.Waiters, fmt.Sprintf("instead of the rounds, measure a leasegate serve process's memory with this many waiting acquires (at most %d)", bench.MaxWaiters))
	fs.BoolVar(&cfg.Capacity, "capacity", cfg.Capacity, "instead of the rounds, measure the cost per cycle of every phase on each topology (docs/capacity.md)")
	fs.Var(listFlag{p: &cfg.CapacityTopologies}, "topologies", "with -capacity: comma-separated topologies among g1,u1,g2,g3,c1,c2,c3 (default all)")
	var capFrom, capDoc string
	fs.StringVar(&capFrom, "capacity-from", capFrom, "print the capacity tables from this -capacity -json report, measuring nothing")
	fs.StringVar(&capDoc, "capacity-doc", capDoc, "with -capacity-from: rewrite this page's generated capacity tables")
	fs.BoolVar(&jsonOut, "json", jsonOut, "print the report as JSON")
	fs.StringVar(&cpuProfile, "cpuprofile", cpuProfile, "write a CPU profile of the last round's gateway phase to this file")
	fs.StringVar(&memProfile, "memprofile", memProfile, "write the allocs profile of the run to this file")
	if exe, err := os.Executable(); err == nil {
		cfg.GatewayCommand = exe
	}
	cfg.GatewayEnv = benchGatewayEnv
	if err := parseCommand(fs, benchUsage, args, getenv, stderr, func() error { return cfg.Validate() }); err != nil {
		return err
	}
	if capFrom != "" {
		return capacityTables(capFrom, capDoc, stdout)
	}
	var files []*os.File
	open := func(path string) (io.Writer, error) {
		f, err := os.Create(path)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		return f, nil
	}
	var err error
	if cpuProfile != "" {
		if cfg.CPUProfile, err = open(cpuProfile); err != nil {
			return err
		}
	}
	if memProfile != "" {
		if cfg.MemProfile, err = open(memProfile); err != nil {
			return err
		}
	}
	rep, err := bench.Run(ctx, cfg)
	for _, f := range files {
		err = errors.Join(err, f.Close())
	}
	if rep == nil {
		return err
	}
	if werr := bench.WriteReport(stdout, rep, jsonOut); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil {
		return err
	}
	n := rep.Floor.Errors + rep.Gateway.Errors
	for _, p := range rep.Phases {
		n += p.Errors
	}
	if c := rep.Capacity; c != nil {
		for _, t := range c.Topologies {
			for _, p := range t.Phases {
				n += p.Errors
			}
		}
	}
	if n > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d cycles failed", n)}
	}
	if n := rep.Etcd.Failures(); n > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d etcd operations failed or broke mutual exclusion", n)}
	}
	if w := rep.Waiters; w != nil && (w.Errors > 0 || w.TimedOut > 0) {
		return exitError{code: 1, msg: fmt.Sprintf("%d waiters failed, %d timed out", w.Errors, w.TimedOut)}
	}
	return nil
}

// capacityTables prints the capacity tables of the report at from, or
// with doc rewrites that page's generated tables.
func capacityTables(from, doc string, stdout io.Writer) error {
	rep, err := bench.ReadCapacity(from)
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

// benchGatewayEnv is added to the environment of the gateway process of
// -waiters (tests make it run main).
var benchGatewayEnv []string
