package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/server"
)

// TestShardedWakeUpsWithTwoGateways is the scale-out measurement of
// docs/benchmarks.md ("Sharded pub/sub on Cluster"): two gateways on one
// Redis Cluster (Redis >= 7), waiters only on gateway A, n release
// hand-offs on A. B receives no release message at all.
func TestShardedWakeUpsWithTwoGateways(t *testing.T) {
	t.Parallel()
	const n = 200
	cl := redistest.StartCluster(t, 3)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.KeyPrefix = fmt.Sprintf("sh%d:", time.Now().UnixNano())
	cfg.Redis.ClusterAddrs = cl.Addrs()
	a, b := newServer(t, cfg), newServer(t, cfg)
	rc := cl.Client(t)
	keys := keyspace.Space{Prefix: cfg.KeyPrefix}
	published := func() float64 { return publishCalls(t, cl) }
	before := published()
	start := time.Now()
	for i := 0; i < n; i++ {
		res := fmt.Sprintf("r-%d", i)
		handOff(t, a, res, func() bool {
			return rc.Exists(context.Background(), keys.Resource("", res).Waiters()).Val() == 1
		})
	}
	elapsed := time.Since(start)
	msgs := func(s *server.Server, kind string) float64 {
		return metric(t, s, `leasegate_release_messages_received_total{kind="`+kind+`"}`)
	}
	aS, aC, bS, bC := msgs(a, "sharded"), msgs(a, "classic"), msgs(b, "sharded"), msgs(b, "classic")
	t.Logf("%d hand-offs in %v (%v each); publishes in Redis %v; A received %v sharded + %v classic, B %v sharded + %v classic",
		n, elapsed.Round(time.Millisecond), (elapsed / n).Round(time.Microsecond), published()-before, aS, aC, bS, bC)
	if aS != n || aC != 0 {
		t.Errorf("A received %v sharded and %v classic messages, want %d and 0", aS, aC, n)
	}
	if bS != 0 || bC != 0 {
		t.Errorf("B, with no waiter, received %v sharded and %v classic messages, want none", bS, bC)
	}
}

// handOff holds resource on s, queues a waiting acquire behind the holder
// on s, releases, and checks the waiter got the lock, then releases it.
// Before the release it waits until the waiter is registered in Redis
// (registered reports it; the release publishes only then) and until s
// subscribed the resource's shard channel, so the wake-up is the message
// (and is counted).
func handOff(t *testing.T, s *server.Server, resource string, registered func() bool) {
	t.Helper()
	h := s.Handler()
	apptest.Do(t, h, http.MethodPost, "/locks/"+resource, `{"owner":"holder","ttl_seconds":60}`).Want(t, http.StatusOK)
	got := make(chan *apptest.Answer, 1)
	go func() {
		got <- apptest.Serve(h, apptest.Request(http.MethodPost, "/locks/"+resource, `{"owner":"waiter","ttl_seconds":60,"wait_ms":20000}`))
	}()
	apptest.WaitFor(t, "the waiter queued", func() bool {
		if !registered() {
			return false
		}
		return metric(t, s, "leasegate_release_shard_channels") == 1
	})
	apptest.Do(t, h, http.MethodDelete, "/locks/"+resource+"?owner=holder", "").Want(t, http.StatusNoContent)
	select {
	case ans := <-got:
		if m := ans.Want(t, http.StatusOK).Map(t); m["acquired"] != true {
			t.Fatalf("%s: the waiter did not get the lock after the release", resource)
		}
	case <-time.After(10 * time.Second):
		// The lease had a minute left and the subscription was up: only
		// the release message could have woken the waiter this soon.
		t.Fatalf("%s: the waiter was not woken by the release", resource)
	}
	apptest.Do(t, h, http.MethodDelete, "/locks/"+resource+"?owner=waiter", "").Want(t, http.StatusNoContent)
}

// publishCalls sums PUBLISH and SPUBLISH calls (from the scripts too) over
// the cluster's masters (INFO commandstats).
func publishCalls(t *testing.T, cl *redistest.Cluster) float64 {
	t.Helper()
	total := 0.0
	for _, node := range cl.Nodes {
		text, err := node.Client(t).Info(context.Background(), "commandstats").Result()
		if err != nil {
			t.Fatalf("%s: INFO commandstats: %v", node, err)
		}
		for _, l := range strings.Split(text, "\n") {
			for _, cmd := range []string{"cmdstat_publish:calls=", "cmdstat_spublish:calls="} {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(l), cmd); ok {
					v, err := strconv.ParseFloat(strings.SplitN(rest, ",", 2)[0], 64)
					if err != nil {
						t.Fatalf("%s: %q: %v", node, l, err)
					}
					total += v
				}
			}
		}
	}
	return total
}
