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

  floor      the two steps done directly with go-redis:
             SET key owner NX PX ttl, then EVALSHA compare-and-delete
  bare http  the same two steps behind POST and DELETE /locks/{r} of a bare
             HTTP gateway (net/http, encoding/json, go-redis; nothing else):
             what an HTTP exchange costs on this machine
  gateway    POST /locks/{r} + DELETE /locks/{r} over loopback HTTP (keep-alive)
             to a gateway started in this process on 127.0.0.1:0

against one redis-server started on a free loopback port with --save ""
--appendonly no (or the loopback --redis-url, which must be otherwise
idle: its INFO counters are read). Prints, per phase, the median over the
rounds of cycles/s, p50/p99 latency, the ratio to the floor and
leasegate ÷ bare HTTP, Redis CPU
and commands per cycle (INFO cpu, INFO commandstats), and this process's
CPU and allocations per cycle (the load driver runs in this process: the
floor phase shows what the driver alone costs; see docs/benchmarks.md).
Stops by itself: at most 5m per phase.

The maintainers' measurement tooling (the capacity model, the etcd
comparison, waiter memory, the hand-off, primitives, lock-set and
tracing phases) is the tools/bench module of the repository, not this
command: see docs/benchmarks.md.

Flags:
`

// cmdBench runs `leasegate bench`: flags into a bench.Config, the run, the
// report on stdout.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg := bench.DefaultConfig()
	var jsonOut bool
	var cpuProfile, memProfile string
	fs := flag.NewFlagSet("leasegate bench", flag.ContinueOnError)
	cfg.Flags(fs)
	fs.BoolVar(&jsonOut, "json", jsonOut, "print the report as JSON")
	fs.StringVar(&cpuProfile, "cpuprofile", cpuProfile, "write a CPU profile of the last round's gateway phase to this file")
	fs.StringVar(&memProfile, "memprofile", memProfile, "write the allocs profile of the run to this file")
	if err := parseCommand(fs, benchUsage, args, getenv, stderr, func() error { return cfg.Validate() }); err != nil {
		return err
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
	if n := rep.Floor.Errors + rep.Bare.Errors + rep.Gateway.Errors; n > 0 {
		return exitError{code: 1, msg: fmt.Sprintf("%d cycles failed", n)}
	}
	return nil
}
