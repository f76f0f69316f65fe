package election_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// TestObserveWaitsForANewTermsValue: a watcher that reads a new term
// between its campaign's acquire and its proclaim holds the elected event
// back until the value is proclaimed (the proclaim publishes and wakes
// it), or, with no proclaim, until ExpiryMargin has passed; then it goes
// out without a value.
func TestObserveWaitsForANewTermsValue(t *testing.T) {
	t.Parallel()
	b := redistest.OnRedis(t)
	observe := func(t *testing.T, margin time.Duration) (*election.Service, <-chan leasegate.ElectionEvent) {
		t.Helper()
		prefix := contracttest.Prefix()
		w := redislock.NewWaiter(b.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
		t.Cleanup(w.Close)
		s := election.New(b.RDB, nil, w, election.Options{Config: redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"},
			WatchPoll: 20 * time.Millisecond, ExpiryMargin: margin})
		events := make(chan leasegate.ElectionEvent, 8)
		ctx, stop := context.WithCancel(context.Background())
		observed := make(chan error, 1)
		go func() { observed <- s.Observe(ctx, "", "leader", events) }()
		t.Cleanup(func() {
			stop()
			if err := <-observed; err != nil {
				t.Errorf("Observe: %v", err)
			}
		})
		if ev := <-events; ev.Kind != leasegate.ElectionState || ev.Leader != nil {
			t.Fatalf("first event: got %v %+v, want state without a leader", ev.Kind, ev.Leader)
		}
		return s, events
	}
	next := func(t *testing.T, events <-chan leasegate.ElectionEvent) leasegate.ElectionEvent {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return leasegate.ElectionEvent{}
		}
	}

	t.Run("the proclaim's value", func(t *testing.T) {
		t.Parallel()
		s, events := observe(t, time.Minute)
		ctx := context.Background()
		res, err := s.AcquireOnly(ctx, "", "leader", "a", 30*time.Second)
		if err != nil || !res.Acquired {
			t.Fatalf("acquire: %+v, %v", res, err)
		}
		// The watcher reads the term within a poll (20 ms) and must hold
		// its event; fifteen polls' worth of silence shows it does.
		select {
		case ev := <-events:
			t.Fatalf("got %v %+v before the proclaim, want nothing yet", ev.Kind, ev.Leader)
		case <-time.After(300 * time.Millisecond):
		}
		if _, err := s.Proclaim(ctx, "", "leader", "a", res.Lock.Token, "v1"); err != nil {
			t.Fatalf("proclaim: %v", err)
		}
		ev := next(t, events)
		if ev.Kind != leasegate.ElectionElected || ev.Leader == nil || ev.Leader.Term != res.Lock.Token || ev.Leader.Value != "v1" {
			t.Fatalf("got %v %+v, want elected of term %d with value v1", ev.Kind, ev.Leader, res.Lock.Token)
		}
	})

	t.Run("no proclaim within the margin", func(t *testing.T) {
		t.Parallel()
		s, events := observe(t, 200*time.Millisecond)
		res, err := s.AcquireOnly(context.Background(), "", "leader", "a", 30*time.Second)
		if err != nil || !res.Acquired {
			t.Fatalf("acquire: %+v, %v", res, err)
		}
		ev := next(t, events)
		if ev.Kind != leasegate.ElectionElected || ev.Leader == nil || ev.Leader.Term != res.Lock.Token || ev.Leader.Value != "" {
			t.Fatalf("got %v %+v, want elected of term %d without a value", ev.Kind, ev.Leader, res.Lock.Token)
		}
		if held := ev.At.Sub(res.Lock.AcquiredAt); held < 200*time.Millisecond {
			t.Errorf("elected went out %v after the acquire, want at least the 200ms margin", held)
		}
	})
}
