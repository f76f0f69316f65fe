package contracttest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// ElectionBackend is one leasegate.ElectionService under test.
type ElectionBackend struct {
	Elections leasegate.ElectionService
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call fail at the store. Nil
	// skips the outage case.
	Outage func(t *testing.T)
}

// Elections runs the contract of leasegate.ElectionService. newBackend is
// called once per case and must return a service whose state no other
// case sees.
func Elections(t *testing.T, newBackend func(t *testing.T) ElectionBackend) {
	t.Run("a first campaign leads with a term and its value, and a rival is refused and told who leads", func(t *testing.T) {
		b := newBackend(t)
		ld := mustLead(t, b, "jobs", "node-a", "10.0.0.1:80")
		if ld.Name != "jobs" || ld.Candidate != "node-a" || ld.Value != "10.0.0.1:80" || ld.Term <= 0 {
			t.Fatalf("got %+v, want node-a leading jobs with its value and a term", ld)
		}
		if got := ld.ExpiresAt.Sub(ld.ElectedAt); got != ttl {
			t.Errorf("got expires_at - elected_at = %v, want %v", got, ttl)
		}
		got, err := b.Elections.Leader(t.Context(), "", "jobs")
		if err != nil || !sameLeader(got, ld) {
			t.Fatalf("Leader: got %+v, %v; want %+v", got, err, ld)
		}
		res := mustCampaign(t, b, leasegate.CampaignRequest{Name: "jobs", Candidate: "node-b", Value: "b", TTL: ttl})
		if res.Elected || res.Current == nil || !sameLeader(*res.Current, ld) {
			t.Fatalf("rival: got %+v, want refused with the current leader %+v", res, ld)
		}
		if res.RetryAfter <= 0 || res.RetryAfter > ttl {
			t.Errorf("rival: got RetryAfter %v, want in (0, %v]", res.RetryAfter, ttl)
		}
	})

	t.Run("the sitting leader campaigning again renews, keeps its term and proclaims its new value", func(t *testing.T) {
		b := newBackend(t)
		first := mustLead(t, b, "again", "node-a", "v1")
		b.Advance(t, 10*time.Millisecond)
		res := mustCampaign(t, b, leasegate.CampaignRequest{Name: "again", Candidate: "node-a", Value: "v2", TTL: ttl})
		if !res.Elected || res.Leadership.Term != first.Term || res.Leadership.Value != "v2" || !res.Leadership.ElectedAt.Equal(first.ElectedAt) {
			t.Fatalf("got %+v, want the same term %d with value v2", res, first.Term)
		}
		if !res.Leadership.ExpiresAt.After(first.ExpiresAt) {
			t.Errorf("got expires_at %v, want after %v", res.Leadership.ExpiresAt, first.ExpiresAt)
		}
	})

	t.Run("proclaim changes the value under the same term, and only for the leader of that term", func(t *testing.T) {
		b := newBackend(t)
		ld := mustLead(t, b, "addr", "node-a", "old")
		got, err := b.Elections.Proclaim(t.Context(), "", "addr", "node-a", ld.Term, "new")
		if err != nil || got.Value != "new" || got.Term != ld.Term || got.Candidate != "node-a" {
			t.Fatalf("got %+v, %v; want value new under term %d", got, err, ld.Term)
		}
		for _, c := range []struct {
			name, candidate string
			term            int64
		}{
			{"another candidate", "node-b", ld.Term},
			{"another term", "node-a", ld.Term + 1},
		} {
			if _, err := b.Elections.Proclaim(t.Context(), "", "addr", c.candidate, c.term, "x"); !errors.Is(err, leasegate.ErrNotLeader) {
				t.Errorf("%s: got %v, want ErrNotLeader", c.name, err)
			}
		}
		if _, err := b.Elections.Proclaim(t.Context(), "", "nobody", "node-a", ld.Term, "x"); !errors.Is(err, leasegate.ErrNotLeader) {
			t.Errorf("no leader: got %v, want ErrNotLeader", err)
		}
		now, err := b.Elections.Leader(t.Context(), "", "addr")
		if err != nil || now.Value != "new" {
			t.Errorf("Leader: got %+v, %v; want value new", now, err)
		}
	})

	t.Run("resign ends the term at once, only for its leader, and the next leader's term is larger", func(t *testing.T) {
		b := newBackend(t)
		ld := mustLead(t, b, "step", "node-a", "a")
		if err := b.Elections.Resign(t.Context(), "", "step", "node-a", ld.Term+1); !errors.Is(err, leasegate.ErrNotLeader) {
			t.Errorf("wrong term: got %v, want ErrNotLeader", err)
		}
		if err := b.Elections.Resign(t.Context(), "", "step", "node-b", ld.Term); !errors.Is(err, leasegate.ErrNotLeader) {
			t.Errorf("wrong candidate: got %v, want ErrNotLeader", err)
		}
		if err := b.Elections.Resign(t.Context(), "", "step", "node-a", ld.Term); err != nil {
			t.Fatalf("resign: %v", err)
		}
		if err := b.Elections.Resign(t.Context(), "", "step", "node-a", ld.Term); !errors.Is(err, leasegate.ErrNotLeader) {
			t.Errorf("resign twice: got %v, want ErrNotLeader", err)
		}
		if _, err := b.Elections.Leader(t.Context(), "", "step"); !errors.Is(err, leasegate.ErrNoLeader) {
			t.Errorf("Leader after resign: got %v, want ErrNoLeader", err)
		}
		next := mustLead(t, b, "step", "node-b", "")
		if next.Term <= ld.Term || next.Value != "" {
			t.Errorf("got %+v, want a term above %d and no value", next, ld.Term)
		}
	})

	t.Run("an expired leadership ends, its value is not shown to the next leader, and terms increase", func(t *testing.T) {
		b := newBackend(t)
		ld := mustLead(t, b, "lapse", "node-a", "a", short)
		b.Advance(t, short+beyond)
		if _, err := b.Elections.Leader(t.Context(), "", "lapse"); !errors.Is(err, leasegate.ErrNoLeader) {
			t.Fatalf("Leader after expiry: got %v, want ErrNoLeader", err)
		}
		if _, err := b.Elections.Proclaim(t.Context(), "", "lapse", "node-a", ld.Term, "late"); !errors.Is(err, leasegate.ErrNotLeader) {
			t.Errorf("proclaim after expiry: got %v, want ErrNotLeader", err)
		}
		next := mustLead(t, b, "lapse", "node-b", "b")
		if next.Term <= ld.Term || next.Value != "b" {
			t.Errorf("got %+v, want a term above %d with value b", next, ld.Term)
		}
	})

	t.Run("after a leadership with a lock delay expires, nobody is elected until the delay has passed", func(t *testing.T) {
		b := newBackend(t)
		res := mustCampaign(t, b, leasegate.CampaignRequest{Name: "delay", Candidate: "node-a", TTL: short, LockDelay: short})
		if !res.Elected {
			t.Fatalf("got %+v, want elected", res)
		}
		b.Advance(t, short+beyond)
		got := mustCampaign(t, b, leasegate.CampaignRequest{Name: "delay", Candidate: "node-b", TTL: ttl})
		if got.Elected || got.Current != nil || got.RetryAfter <= 0 || got.RetryAfter > short {
			t.Fatalf("during the delay: got %+v, want not elected, no current leader, RetryAfter in (0, %v]", got, short)
		}
		b.Advance(t, short)
		next := mustLead(t, b, "delay", "node-b", "b")
		if next.Term <= res.Leadership.Term {
			t.Errorf("got term %d, want above %d", next.Term, res.Leadership.Term)
		}
	})

	t.Run("a resignation ends a leadership with a lock delay at once", func(t *testing.T) {
		b := newBackend(t)
		res := mustCampaign(t, b, leasegate.CampaignRequest{Name: "nodelay", Candidate: "node-a", TTL: ttl, LockDelay: 10 * time.Second})
		if err := b.Elections.Resign(t.Context(), "", "nodelay", "node-a", res.Leadership.Term); err != nil {
			t.Fatal(err)
		}
		mustLead(t, b, "nodelay", "node-b", "b")
	})

	t.Run("a waiting campaign leads as soon as the leader resigns", func(t *testing.T) {
		b := newBackend(t)
		ld := mustLead(t, b, "queue", "node-a", "a")
		got := inBackground(func() (leasegate.CampaignResult, error) {
			return b.Elections.Campaign(t.Context(), "", leasegate.CampaignRequest{Name: "queue", Candidate: "node-b", Value: "b", TTL: ttl, Wait: 10 * time.Second})
		})
		// Let the campaign find the leadership taken and queue.
		b.Advance(t, 20*time.Millisecond)
		if err := b.Elections.Resign(t.Context(), "", "queue", "node-a", ld.Term); err != nil {
			t.Fatalf("resign: %v", err)
		}
		select {
		case a := <-got:
			if a.err != nil || !a.res.Elected || a.res.Leadership.Candidate != "node-b" || a.res.Leadership.Term <= ld.Term || a.res.Leadership.Value != "b" {
				t.Fatalf("got %+v, %v; want node-b leading with a larger term", a.res, a.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting campaign was not elected within 5s of the resignation")
		}
	})

	t.Run("observe starts with the state and reports elected, proclaimed and resigned", func(t *testing.T) {
		b := newBackend(t)
		ctx, cancel := context.WithCancel(t.Context())
		events := make(chan leasegate.ElectionEvent, 16)
		done := make(chan error, 1)
		go func() { done <- b.Elections.Observe(ctx, "", "seen", events) }()
		next := func(want leasegate.ElectionEventKind) leasegate.ElectionEvent {
			t.Helper()
			select {
			case ev := <-events:
				if ev.Kind != want {
					t.Fatalf("got event %s %+v, want %s", ev.Kind, ev.Leader, want)
				}
				return ev
			case err := <-done:
				t.Fatalf("Observe ended: %v", err)
			case <-time.After(5 * time.Second):
				t.Fatalf("no %s event within 5s", want)
			}
			return leasegate.ElectionEvent{}
		}
		if ev := next(leasegate.ElectionState); ev.Leader != nil {
			t.Fatalf("state: got %+v, want no leader", ev.Leader)
		}
		ld := mustLead(t, b, "seen", "node-a", "a")
		if ev := next(leasegate.ElectionElected); ev.Leader == nil || ev.Leader.Term != ld.Term || ev.Leader.Value != "a" {
			t.Fatalf("elected: got %+v, want term %d value a", ev.Leader, ld.Term)
		}
		if _, err := b.Elections.Proclaim(t.Context(), "", "seen", "node-a", ld.Term, "a2"); err != nil {
			t.Fatal(err)
		}
		if ev := next(leasegate.ElectionProclaimed); ev.Leader == nil || ev.Leader.Value != "a2" {
			t.Fatalf("proclaimed: got %+v, want value a2", ev.Leader)
		}
		if err := b.Elections.Resign(t.Context(), "", "seen", "node-a", ld.Term); err != nil {
			t.Fatal(err)
		}
		if ev := next(leasegate.ElectionResigned); ev.Leader == nil || ev.Leader.Term != ld.Term || ev.At.IsZero() {
			t.Fatalf("resigned: got %+v at %v, want term %d", ev.Leader, ev.At, ld.Term)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Observe after its context ended: %v, want nil", err)
		}
	})

	t.Run("List shows the elections with a leader, with their values", func(t *testing.T) {
		b := newBackend(t)
		a := mustLead(t, b, "list-a", "node-a", "va")
		mustLead(t, b, "list-b", "node-b", "vb")
		gone := mustLead(t, b, "list-c", "node-c", "vc")
		if err := b.Elections.Resign(t.Context(), "", "list-c", "node-c", gone.Term); err != nil {
			t.Fatal(err)
		}
		page, err := b.Elections.List(t.Context(), "", "list-", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 || page.Items[0].Name != "list-a" || page.Items[1].Name != "list-b" {
			t.Fatalf("got %+v, want list-a and list-b", page.Items)
		}
		if !sameLeader(page.Items[0].Leader, a) || page.Items[1].Value != "vb" {
			t.Errorf("got %+v, want %+v first and value vb second", page.Items, a)
		}
	})

	t.Run("a store outage elects nobody and says unavailable", func(t *testing.T) {
		b := newBackend(t)
		needOutage(t, b.Outage)
		b.Outage(t)
		wantUnavailable(t, []storeCall{
			{"campaign", func() error {
				res, err := b.Elections.Campaign(t.Context(), "", leasegate.CampaignRequest{Name: "down", Candidate: "a", TTL: ttl})
				if res.Elected {
					t.Errorf("campaign elected during an outage")
				}
				return err
			}},
			{"proclaim", func() error { _, err := b.Elections.Proclaim(t.Context(), "", "down", "a", 1, "v"); return err }},
			{"resign", func() error { return b.Elections.Resign(t.Context(), "", "down", "a", 1) }},
			{"leader", func() error { _, err := b.Elections.Leader(t.Context(), "", "down"); return err }},
		})
	})
}

// mustCampaign campaigns and fails the test on an error.
func mustCampaign(t *testing.T, b ElectionBackend, req leasegate.CampaignRequest) leasegate.CampaignResult {
	t.Helper()
	res, err := b.Elections.Campaign(t.Context(), "", req)
	if err != nil {
		t.Fatalf("campaign %+v: %v", req, err)
	}
	return res
}

// mustLead campaigns (ttl, or the one given) and fails the test unless
// the candidate leads.
func mustLead(t *testing.T, b ElectionBackend, name, candidate, value string, d ...time.Duration) leasegate.Leader {
	t.Helper()
	lease := ttl
	if len(d) > 0 {
		lease = d[0]
	}
	res := mustCampaign(t, b, leasegate.CampaignRequest{Name: name, Candidate: candidate, Value: value, TTL: lease})
	if !res.Elected {
		t.Fatalf("campaign of %s on %s: got %+v, want elected", candidate, name, res)
	}
	return res.Leadership
}

// sameLeader compares two leaderships (times to the millisecond).
func sameLeader(a, b leasegate.Leader) bool {
	return a.Name == b.Name && a.Candidate == b.Candidate && a.Value == b.Value && a.Term == b.Term &&
		a.ElectedAt.Equal(b.ElectedAt) && a.ExpiresAt.Equal(b.ExpiresAt)
}
