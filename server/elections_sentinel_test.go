package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// TestElectionsOnSentinel: under Sentinel (a plain client to the master,
// as on a single Redis) an election keeps its contract: one leader, a
// rival refused and told who leads, proclaim and resign checked by term,
// and the next leader's term above the last. A queued campaign is woken
// by the resignation.
func TestElectionsOnSentinel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := sentinelClient(t)
	w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: "el:released"})
	t.Cleanup(w.Close)
	s := election.New(rdb, nil, w, election.Options{Config: redislock.Config{Prefix: "el:", ReleaseChannel: "el:released"}})

	first, err := s.Campaign(ctx, "", leasegate.CampaignRequest{Name: "nightly", Candidate: "n1", Value: "10.0.0.1", TTL: time.Minute})
	if err != nil || !first.Elected {
		t.Fatalf("first campaign: got %+v, %v; want elected", first, err)
	}
	rival, err := s.Campaign(ctx, "", leasegate.CampaignRequest{Name: "nightly", Candidate: "n2", TTL: time.Minute})
	if err != nil || rival.Elected || rival.Current == nil || rival.Current.Candidate != "n1" || rival.Current.Value != "10.0.0.1" {
		t.Fatalf("rival campaign: got %+v, %v; want refused, told n1 leads with its value", rival, err)
	}
	if _, err := s.Proclaim(ctx, "", "nightly", "n1", first.Leadership.Term+1, "x"); !errors.Is(err, leasegate.ErrNotLeader) {
		t.Errorf("proclaim under another term: got %v, want ErrNotLeader", err)
	}
	got, err := s.Proclaim(ctx, "", "nightly", "n1", first.Leadership.Term, "10.0.0.9")
	if err != nil || got.Value != "10.0.0.9" || got.Term != first.Leadership.Term {
		t.Fatalf("proclaim: got %+v, %v; want the new value under the same term", got, err)
	}

	queued := make(chan leasegate.CampaignResult, 1)
	go func() {
		res, err := s.Campaign(ctx, "", leasegate.CampaignRequest{Name: "nightly", Candidate: "n2", TTL: time.Minute, Wait: 30 * time.Second})
		if err != nil {
			t.Errorf("queued campaign: %v", err)
		}
		queued <- res
	}()
	redistest.Eventually(t, 10*time.Second, "the queued campaign waits", func() bool { return w.Waiting() > 0 })
	if err := s.Resign(ctx, "", "nightly", "n1", first.Leadership.Term); err != nil {
		t.Fatalf("resign: %v", err)
	}
	next := <-queued
	if !next.Elected || next.Leadership.Candidate != "n2" || next.Leadership.Term <= first.Leadership.Term {
		t.Fatalf("after the resignation: got %+v; want n2 elected with a term above %d", next, first.Leadership.Term)
	}
}
