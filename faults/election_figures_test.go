package faults

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/redistest"
)

var (
	flagElectRounds  = flag.Int("elect.rounds", 3, "failovers per case of TestElectionFigures (the figures are the median over them)")
	flagElectHandoff = flag.Int("elect.handoffs", 20, "resign hand-offs of TestElectionFigures")
	flagElectReport  = flag.String("elect.report", "", "write TestElectionFigures' figures as JSON to this file")
)

// electionFigures is what TestElectionFigures measured, in milliseconds.
type electionFigures struct {
	TTLms       int64 `json:"ttl_ms"`
	LockDelayMs int64 `json:"lock_delay_ms"`
	// FailoverMs: from the killed leader's election to the standby's
	// (Redis clock); the target is TTL (+ lock delay) + 100 ms.
	FailoverMs []float64 `json:"failover_ms"`
	// AfterExpiryMs: from the killed leader's expires_at (+ lock delay)
	// to the standby's election (Redis clock).
	AfterExpiryMs []float64 `json:"after_expiry_ms"`
	// ObserveLagMs: from the standby's election (Redis clock) to an
	// Observe channel delivering it (this host's clock; the same host).
	ObserveLagMs []float64 `json:"observe_lag_ms"`
}

type electionReport struct {
	Failover          electionFigures `json:"failover"`
	FailoverWithDelay electionFigures `json:"failover_with_lock_delay"`
	// HandoffMs: from the start of the leader's resignation to the queued
	// standby's campaign answering elected, on one gateway.
	HandoffMs []float64 `json:"handoff_ms"`
}

// TestElectionFigures measures the election targets of issue 23 on one
// in-process gateway over a redis-server: a leader that dies without
// resigning is followed by a waiting standby within TTL + 100 ms (TTL +
// lock delay + 100 ms with a delay), Observe sees the new leader within
// 100 ms, and a resignation wakes the queued standby within 5 ms (p50).
// It asserts the behaviour (the standby leads, with a larger term, and
// Observe reports it) with bounds loose enough for a loaded CI machine,
// and logs the figures against the targets (docs/benchmarks.md).
func TestElectionFigures(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	base := inProcess(t, gatewayConfig("redis://"+srv.Addr()))
	c := client.New(base)
	var rep electionReport
	t.Run("failover after the leader dies", func(t *testing.T) {
		rep.Failover = failovers(t, c, "failover", time.Second, 0, max(*flagElectRounds, 1))
	})
	t.Run("failover after the leader dies, with a lock delay", func(t *testing.T) {
		rep.FailoverWithDelay = failovers(t, c, "delayed", time.Second, 500*time.Millisecond, max(*flagElectRounds, 1))
	})
	t.Run("a resignation wakes the queued standby", func(t *testing.T) {
		rep.HandoffMs = handoffs(t, c, max(*flagElectHandoff, 1))
	})
	for _, f := range []struct {
		name   string
		values []float64
		target float64
	}{
		{"failover (ms from the dead leader's election)", rep.Failover.FailoverMs, 1000 + 100},
		{"failover after expiry (ms)", rep.Failover.AfterExpiryMs, 100},
		{"failover with a 500 ms lock delay (ms from the dead leader's election)", rep.FailoverWithDelay.FailoverMs, 1000 + 500 + 100},
		{"observe lag (ms)", append(slices.Clone(rep.Failover.ObserveLagMs), rep.FailoverWithDelay.ObserveLagMs...), 100},
		{"resign hand-off (ms)", rep.HandoffMs, 5},
	} {
		med, lo, hi := medianMinMax(f.values)
		t.Logf("%-72s median %8.2f  min %8.2f  max %8.2f  target %6.0f  met %v", f.name, med, lo, hi, f.target, med <= f.target)
	}
	if *flagElectReport != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(*flagElectReport, append(b, '\n'), 0o644)
		}
		if err != nil {
			t.Errorf("write report: %v", err)
		}
	}
}

func failovers(t *testing.T, c *client.Client, what string, ttl, delay time.Duration, rounds int) electionFigures {
	t.Helper()
	fig := electionFigures{TTLms: ttl.Milliseconds(), LockDelayMs: delay.Milliseconds()}
	// A round whose leader's lease ended before Observe's first read (a
	// loaded machine: the read came more than ttl after the election)
	// measures nothing and is run again under a new name, a few times at
	// the most; a first read without the live leader fails the test.
	for i, try := 0, 0; i < rounds; try++ {
		name := what + "-" + strconv.Itoa(try)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		a, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: name, Candidate: "a", Value: "a", TTL: ttl, LockDelay: delay})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		obs := c.Observe(ctx, name)
		if first := <-obs; first.Term != a.Term {
			cancel()
			if first.Term == 0 && !time.Now().Before(a.ExpiresAt) && try < rounds+3 {
				t.Logf("round %d: the leader's lease ended (%v) before Observe's first read; again", i, a.ExpiresAt)
				continue
			}
			t.Fatalf("Observe: got %+v first, want the leader's term %d", first, a.Term)
		}
		// "a" dies: it never renews nor resigns. "b" waits in line.
		b, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: name, Candidate: "b", Value: "b", TTL: 30 * time.Second, Wait: ttl + delay + 5*time.Second, LockDelay: delay})
		if err != nil {
			cancel()
			t.Fatalf("the standby was not elected: %v", err)
		}
		if b.Term <= a.Term {
			t.Errorf("got the standby's term %d, want above %d", b.Term, a.Term)
		}
		var seen time.Time
		for ld := range obs {
			if ld.Term == b.Term {
				seen = time.Now()
				break
			}
		}
		cancel()
		if seen.IsZero() {
			t.Fatalf("Observe never reported the standby's term %d", b.Term)
		}
		failover := b.ElectedAt.Sub(a.ElectedAt)
		fig.FailoverMs = append(fig.FailoverMs, ms(failover))
		fig.AfterExpiryMs = append(fig.AfterExpiryMs, ms(b.ElectedAt.Sub(a.ExpiresAt.Add(delay))))
		fig.ObserveLagMs = append(fig.ObserveLagMs, ms(seen.Sub(b.ElectedAt)))
		if failover < ttl+delay || failover > ttl+delay+time.Second {
			t.Errorf("round %d: the standby led %v after the dead leader, want within [%v, %v]", i, failover, ttl+delay, ttl+delay+time.Second)
		}
		if lag := seen.Sub(b.ElectedAt); lag > time.Second {
			t.Errorf("round %d: Observe saw the new leader %v after its election, want well within 1s", i, lag)
		}
		i++
	}
	return fig
}

func handoffs(t *testing.T, c *client.Client, rounds int) []float64 {
	t.Helper()
	var out []float64
	for i := range rounds {
		name := "handoff-" + strconv.Itoa(i)
		ctx := t.Context()
		a, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: name, Candidate: "a", TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		type answer struct {
			ld  client.Leader
			at  time.Time
			err error
		}
		got := make(chan answer, 1)
		go func() {
			ld, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: name, Candidate: "b", TTL: 30 * time.Second, Wait: 10 * time.Second})
			got <- answer{ld, time.Now(), err}
		}()
		redistest.Eventually(t, 5*time.Second, "the standby waits in line", func() bool {
			p, err := c.Elections().List(ctx, "", name, "", 1)
			return err == nil && len(p.Items) == 1 && p.Items[0].Name == name && p.Items[0].Waiters > 0
		})
		start := time.Now()
		if err := c.Resign(ctx, a); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil || r.ld.Candidate != "b" || r.ld.Term <= a.Term {
			t.Fatalf("the standby: got %+v, %v; want elected with a larger term", r.ld, r.err)
		}
		out = append(out, ms(r.at.Sub(start)))
		if d := r.at.Sub(start); d > time.Second {
			t.Errorf("round %d: the standby led %v after the resignation began, want well within 1s", i, d)
		}
	}
	return out
}

func medianMinMax(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2], s[0], s[len(s)-1]
}
