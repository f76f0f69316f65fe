package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/leasegate/leasegate/bench"
)

// The more phases of a round (-handoff, -returning, -primitives,
// -locksets, -tracing): each one runs
// after the floor and gateway phases, for the same time, at the same
// concurrency, and is compared with a floor measured in the same round.

// MaxWaiters bounds -waiters: every waiter is a socket in the driver and
// one in the gateway, and all of them come from one loopback address.
const MaxWaiters = 20000

// validatePhases checks the optional phases' settings.
func (c Config) validatePhases() []error {
	var errs []error
	if c.Waiters < 0 || c.Waiters > MaxWaiters {
		errs = append(errs, fmt.Errorf("waiters must be 0..%d, got %d", MaxWaiters, c.Waiters))
	}
	if c.Waiters > 0 {
		if c.Handoff || c.Returning > 0 || c.Primitives || c.LockSets || c.Etcd {
			errs = append(errs, errors.New("waiters is a measurement of its own: not with handoff, returning, primitives, locksets or etcd"))
		}
	}
	if c.Capacity {
		if c.Waiters > 0 || c.Handoff || c.Returning > 0 || c.Primitives || c.LockSets || c.Etcd || c.Tracing || c.RedisURL != "" {
			errs = append(errs, errors.New("capacity is a measurement of its own: not with waiters, handoff, returning, primitives, locksets, tracing, etcd or redis-url"))
		}
		for _, n := range c.CapacityTopologies {
			if !slices.ContainsFunc(Topologies, func(t Topology) bool { return t.Name == n }) {
				errs = append(errs, fmt.Errorf("capacity topology %q: want one of g1, u1, g2, g3, c1, c2, c3", n))
			}
		}
	}
	if (c.Handoff || c.Capacity) && c.Concurrency < 2 {
		errs = append(errs, fmt.Errorf("handoff needs at least 2 clients to hand a lock between, got %d", c.Concurrency))
	}
	if c.Returning < 0 || c.Returning > bench.MaxResources {
		errs = append(errs, fmt.Errorf("returning must be 0..%d resources, got %d", bench.MaxResources, c.Returning))
	}
	if c.Returning > 0 && c.Concurrency > bench.MaxLoadConcurrency {
		errs = append(errs, fmt.Errorf("returning runs at most %d clients (leasegate load's bound), got %d", bench.MaxLoadConcurrency, c.Concurrency))
	}
	return errs
}

// extra is one optional phase: the cycles it runs, or for the
// returning phase none (it drives itself), and the name of the phase of
// the same round whose cycles/s its ratio divides by ("" for a floor).
type extra struct {
	c          bench.Cycler
	comparedTo string
}

type extras struct {
	list    []extra
	closers []func() // the traced gateways, -handoff's blpop floor
	// returning is the returning phase's load report of each round.
	returning []*bench.LoadReport
}

// newExtras builds the optional phases cfg asks for; they share the
// rig's gateway (its HTTP client and server) and Redis.
func newExtras(ctx context.Context, rig *bench.Rig, cfg Config, runID string) (*extras, error) {
	gw, opt := rig.Gateway, rig.Options
	x := &extras{}
	// The primitives first, right after the lock phases: on a shared
	// machine the closer a phase runs to its floor, the less the load
	// moves between them. The hand-off runs right after its own floor.
	if cfg.LockSets {
		x.list = append(x.list, extra{c: newLockSetCycle(gw.Client(), []string{gw.URL()}, cfg, runID), comparedTo: "gateway"})
	}
	if cfg.Primitives {
		x.list = append(x.list,
			extra{c: newSemaphoreCycle(gw, cfg, runID), comparedTo: "floor"},
			extra{c: newClaimCycle(gw, cfg, runID), comparedTo: "floor"})
	}
	if cfg.Tracing {
		for _, ratio := range []float64{1, 0.01} {
			tg, closeTracing, err := newTracedGateway(ctx, opt, cfg, runID, ratio)
			if err != nil {
				x.close()
				return nil, err
			}
			x.closers = append(x.closers, closeTracing)
			x.list = append(x.list, extra{c: tg, comparedTo: "gateway"})
		}
	}
	if cfg.Handoff {
		tf, err := newTokenFloor(ctx, opt, cfg, runID)
		if err != nil {
			x.close()
			return nil, err
		}
		x.closers = append(x.closers, tf.close)
		x.list = append(x.list,
			extra{c: tf},
			extra{c: newHandoff(gw, cfg, runID), comparedTo: tf.Name()})
	}
	if cfg.Returning > 0 {
		x.list = append(x.list, extra{comparedTo: "gateway"})
	}
	return x, nil
}

func (x *extras) cyclers() []bench.Cycler {
	var cs []bench.Cycler
	for _, e := range x.list {
		if e.c != nil {
			cs = append(cs, e.c)
		}
	}
	return cs
}

func (x *extras) close() {
	for _, f := range x.closers {
		f()
	}
}

// run runs every optional phase once; floor and gw are this round's lock
// floor and gateway phases. The returning phase's load report, when it
// ran, is kept in x.returning.
func (x *extras) run(ctx context.Context, rig *bench.Rig, cfg Config, floor, gw bench.Phase) ([]bench.Phase, error) {
	var out []bench.Phase
	byName := map[string]bench.Phase{floor.Name: floor, gw.Name: gw}
	for _, e := range x.list {
		var p bench.Phase
		var err error
		if e.c == nil {
			var lr *bench.LoadReport
			p, lr, err = runReturning(ctx, rig, cfg)
			if lr != nil {
				x.returning = append(x.returning, lr)
			}
		} else {
			p, err = bench.RunPhase(ctx, rig.Stats, cfg.Config, e.c, nil)
		}
		if err != nil {
			return nil, err
		}
		p.ComparedTo = e.comparedTo
		switch f := byName[e.comparedTo]; {
		case e.comparedTo == "":
			p.Ratio = 1 // a floor
		case f.CyclesPerSec > 0:
			p.Ratio = p.CyclesPerSec / f.CyclesPerSec
			if e.comparedTo == gw.Name && f.ProcessCPUus > 0 {
				p.CPURatio = p.ProcessCPUus / f.ProcessCPUus
			}
		}
		byName[p.Name] = p
		out = append(out, p)
	}
	return out, nil
}

// printPhases says what the optional phases' rows mean and gives their
// cycles/s and ratio in each round.
func printPhases(w io.Writer, r *bench.Report) {
	if len(r.Phases) == 0 {
		return
	}
	has := func(n string) bool {
		return slices.ContainsFunc(r.Phases, func(p bench.Phase) bool { return p.Name == n })
	}
	if has("handoff") {
		fmt.Fprintln(w, "handoff: every client waits (wait_ms) on ONE resource over HTTP and releases it as soon as it is granted;")
		fmt.Fprintln(w, "blpop: the same with go-redis, a token taken with BLPOP and given back with LPUSH (the raw-Redis FIFO hand-off);")
		fmt.Fprintln(w, "  for both, cycles/s = hand-offs/s; p50/p99 = release to the next holder (a release's answer to the next grant's answer)")
	}
	if has("sem") {
		fmt.Fprintln(w, "sem: POST + DELETE /semaphores/{n} (limit 10, a name per client); claim: POST /claims/{s}/{k} + POST .../complete")
		fmt.Fprintln(w, "  (a new key every cycle, keep 1 s); both two requests, compared with the floor (two round trips)")
	}
	if len(r.Rounds) > 1 {
		fmt.Fprintln(w, "\noptional phases by round (cycles/s, ratio to the phase named):")
		for i, rd := range r.Rounds {
			var parts []string
			for _, p := range rd.Phases {
				if p.ComparedTo == "" {
					parts = append(parts, fmt.Sprintf("%s %.0f", p.Name, p.CyclesPerSec))
				} else {
					parts = append(parts, fmt.Sprintf("%s %.0f (%.3f of %s)", p.Name, p.CyclesPerSec, p.Ratio, p.ComparedTo))
				}
			}
			fmt.Fprintf(w, "  %d: %s\n", i+1, strings.Join(parts, "; "))
		}
	}
}
