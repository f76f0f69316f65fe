package main

import (
	"context"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
)

// -tracing adds the two traced gateway phases, each compared to the
// round's gateway phase (tracing off). It asserts no speed.
func TestTracingPhasesRun(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.RedisURL = redistest.Start(t).URL()
	cfg.Concurrency = 2
	cfg.Duration = 300 * time.Millisecond
	cfg.Warmup = 50 * time.Millisecond
	cfg.Rounds = 1
	cfg.Tracing = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]bool{"gateway, traced 100%": true, "gateway, traced 1%": true}
	for _, p := range rep.Rounds[0].Phases {
		if !want[p.Name] {
			continue
		}
		delete(want, p.Name)
		if p.Cycles == 0 || p.Errors != 0 {
			t.Errorf("%s: got %d cycles and %d errors (%s), want cycles and no errors", p.Name, p.Cycles, p.Errors, p.FirstError)
		}
		if p.ComparedTo != "gateway" || p.Ratio <= 0 {
			t.Errorf("%s: got compared to %q, ratio %v; want the gateway phase, a ratio", p.Name, p.ComparedTo, p.Ratio)
		}
	}
	if len(want) != 0 {
		t.Errorf("phases: missing %v", want)
	}
}
