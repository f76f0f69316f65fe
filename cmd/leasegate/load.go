package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/leasegate/leasegate/bench"
)

const loadUsage = `Usage: leasegate load [flags]

Drives a running gateway with a bounded load and prints a summary:
requests, errors by status and problem type, throughput, latency
percentiles per operation, acquired and contended counts, and a fencing
check (no two owners ever believed they held the same resource; each new
holder's token is above the previous one's).

Scenarios:
  acquire-release  each worker acquires a lock and releases it, over and over
                   (worker i uses resource i mod --resources)
  contended        every attempt picks one of --resources at random with a
                   fresh owner: many owners on few resources
  user-lock        POST /user-locks attempts on --resources user ids
  waiting          each worker is one owner; every cycle it picks one of
                   --resources at random, acquires it waiting up to --wait-ms,
                   holds it --hold and releases it

The run stops after --duration, or after exactly --requests requests,
whichever comes first. Only loopback gateways are loaded unless
--allow-remote. Exit status: 0; 1 on fencing violations or when no request
succeeded; 2 usage.

Flags:
`

// cmdLoad runs `leasegate load`: flags into a bench.LoadConfig, the run,
// the report on stdout and the exit status.
func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cfg := bench.DefaultLoadConfig()
	var jsonOut bool
	fs := loadFlagSet(&cfg, &jsonOut)
	if err := parseCommand(fs, loadUsage, args, getenv, stderr, func() error { return cfg.Validate() }); err != nil {
		return err
	}

	rep, err := bench.Load(ctx, cfg)
	if err != nil {
		return err
	}
	if err := bench.WriteReport(stdout, rep, jsonOut); err != nil {
		return err
	}
	switch {
	case rep.Fencing != nil && rep.Fencing.Violations > 0:
		return exitError{code: 1, msg: fmt.Sprintf("%d fencing violations: two owners believed they held the same resource, or a token did not increase", rep.Fencing.Violations)}
	case rep.Requests > 0 && rep.Successes == 0:
		return exitError{code: 1, msg: "no request succeeded"}
	}
	return nil
}

// loadFlagSet binds the flags of `leasegate load` to cfg and jsonOut, with
// cfg's values as defaults (docs/configuration.md lists them; a test keeps
// the two equal).
func loadFlagSet(cfg *bench.LoadConfig, jsonOut *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("leasegate load", flag.ContinueOnError)
	fs.StringVar(&cfg.URL, "url", cfg.URL, "gateway base URL (loopback only unless --allow-remote)")
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "API key (sent as Authorization: Bearer)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long to run, at most "+bench.MaxDuration.String())
	fs.IntVar(&cfg.Requests, "requests", cfg.Requests, "stop after exactly this many requests (0: run for --duration)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "workers sending requests at the same time")
	fs.IntVar(&cfg.Resources, "resources", cfg.Resources, "distinct resource names (user ids for user-lock); 1: all workers contend on one lock (0: one per worker, 1 for contended)")
	fs.StringVar((*string)(&cfg.Scenario), "scenario", string(cfg.Scenario), "acquire-release, contended, user-lock or waiting")
	fs.DurationVar(&cfg.TTL, "ttl", cfg.TTL, "lease (or user-lock window) time, whole seconds")
	fs.Var(millis{&cfg.Wait}, "wait-ms", "waiting: the wait_ms of each acquire")
	fs.DurationVar(&cfg.Hold, "hold", cfg.Hold, "waiting: how long each lease is held before its release")
	fs.BoolVar(jsonOut, "json", *jsonOut, "print the summary as JSON")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", cfg.AllowRemote, "allow a gateway that is not on a loopback address")
	return fs
}

// millis is a flag of a duration in whole milliseconds (the API's wait_ms).
type millis struct{ d *time.Duration }

func (m millis) String() string {
	if m.d == nil {
		return "0"
	}
	return strconv.FormatInt(m.d.Milliseconds(), 10)
}

func (m millis) Set(s string) error {
	ms, err := strconv.ParseUint(s, 10, 31)
	*m.d = time.Duration(ms) * time.Millisecond
	return err
}
