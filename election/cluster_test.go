package election_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// TestElectionsOnRealCluster: on Redis Cluster an election's keys share
// one slot (its tag), a resignation SPUBLISHes on the election's shard
// channel and wakes the campaign waiting in line (polling is off, and the
// leadership has a minute left, so nothing else wakes it), Observe
// follows the change, and the listing finds the elections through the
// index's second step.
func TestElectionsOnRealCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	prefix := fmt.Sprintf("elsh%d:", time.Now().UnixNano())
	// What the Waiter reports through its callbacks, as /metrics reads
	// it; releases here are all sharded.
	var sharded, shardChannels atomic.Int64
	w := redislock.NewWaiter(rc, redislock.WaiterOptions{Channel: prefix + "released", Shards: rc, PollInterval: time.Hour,
		OnMessage: func(bool) { sharded.Add(1) }, OnShardChannels: func(n int) { shardChannels.Store(int64(n)) }})
	t.Cleanup(w.Close)
	// The confirmation of the Waiter's own subscription wakes every wait
	// for a re-check: let it come first.
	redistest.Eventually(t, 10*time.Second, "the waiter subscribes", w.Active)
	s := election.New(rc, nil, w, election.Options{Config: redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released", ShardedReleases: true}})
	tries := redistest.ScriptsBy(rc, "b")
	for i := range 4 {
		name := fmt.Sprintf("leader-%d", i)
		// The last round's shard channel is dropped once its queue and
		// watcher are gone; until then a count of one could be that channel.
		redistest.Eventually(t, 10*time.Second, name+": no shard channel left", func() bool { return shardChannels.Load() == 0 })
		a, err := s.Campaign(ctx, "", leasegate.CampaignRequest{Name: name, Candidate: "a", Value: "va", TTL: time.Minute})
		if err != nil || !a.Elected {
			t.Fatalf("%s: first campaign: got %+v, %v; want elected", name, a, err)
		}
		octx, cancel := context.WithCancel(ctx)
		events := make(chan leasegate.ElectionEvent, 8)
		go func() { _ = s.Observe(octx, "", name, events) }()
		if ev := <-events; ev.Kind != leasegate.ElectionState || ev.Leader == nil || ev.Leader.Term != a.Leadership.Term {
			cancel()
			t.Fatalf("%s: got first event %s %+v, want the state with term %d", name, ev.Kind, ev.Leader, a.Leadership.Term)
		}
		// Observe's channel is confirmed before the campaign comes, so the
		// campaign joins a subscription already listening and makes one
		// try; the resignation comes after it has answered, so only the
		// resignation's message can wake the campaign.
		redistest.Eventually(t, 10*time.Second, name+": Observe's channel subscribed", func() bool { return shardChannels.Load() == 1 })
		base := tries()
		before := sharded.Load()
		got := make(chan leasegate.CampaignResult, 1)
		go func() {
			r, err := s.Campaign(ctx, "", leasegate.CampaignRequest{Name: name, Candidate: "b", Value: "vb", TTL: time.Minute, Wait: 30 * time.Second})
			if err != nil {
				t.Errorf("%s: waiting campaign: %v", name, err)
			}
			got <- r
		}()
		redistest.Eventually(t, 10*time.Second, name+": the campaign queues after one try", func() bool {
			return w.QueuedOn(s.Keys("", name).Lock()) > 0 && tries()-base == 1
		})
		if err := s.Resign(ctx, "", name, "a", a.Leadership.Term); err != nil {
			cancel()
			t.Fatalf("%s: resign: %v", name, err)
		}
		select {
		case r := <-got:
			if !r.Elected || r.Leadership.Candidate != "b" || r.Leadership.Term <= a.Leadership.Term || r.Leadership.Value != "vb" {
				cancel()
				t.Fatalf("%s: got %+v, want b elected with a larger term", name, r)
			}
		case <-time.After(5 * time.Second):
			cancel()
			t.Fatalf("%s: the waiting campaign was not woken by the resignation", name)
		}
		// The message is counted before it wakes anyone. (The new
		// leader's value is published too, so there may be two.)
		if after := sharded.Load(); after <= before {
			cancel()
			t.Fatalf("%s: sharded messages went from %d to %d, want the resignation's", name, before, after)
		}
		for _, want := range []leasegate.ElectionEventKind{leasegate.ElectionResigned, leasegate.ElectionElected} {
			select {
			case ev := <-events:
				if ev.Kind != want {
					t.Errorf("%s: got event %s, want %s", name, ev.Kind, want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%s: no %s event within 5s", name, want)
			}
		}
		cancel()
	}
	page, err := s.List(ctx, "", "leader-", "", 10)
	if err != nil || len(page.Items) != 4 || page.Items[0].Candidate != "b" || page.Items[0].Value != "vb" {
		t.Fatalf("List: got %+v, %v; want the 4 elections led by b", page, err)
	}
}
