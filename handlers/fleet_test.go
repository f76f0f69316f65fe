package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// A fleet: three gateways (each its own Waiter and subscription, as
// three processes have) on one real redis-server (docs/waiting.md, "One
// line per name").
func newFleet(t testing.TB) []*apptest.App {
	t.Helper()
	b := redistest.OnRedis(t)
	prefix := fmt.Sprintf("fleet%d:", time.Now().UnixNano())
	fleet := make([]*apptest.App, 3)
	for i := range fleet {
		fleet[i] = apptest.NewApp(t, b, apptest.Options{Prefix: prefix, Wait: true, Primitives: true})
	}
	return fleet
}

// fleetPrimitive is one kind of name waited on through the HTTP API.
type fleetPrimitive struct {
	kind string
	// take asks for name as owner with wait_ms; it answers whether it was
	// granted, and what release needs.
	take    func(a *apptest.App, owner string, waitMS int) (granted bool, term any, ans *apptest.Answer)
	release func(t testing.TB, a *apptest.App, owner string, term any)
	// queued is how many waiters on this gateway have made their first
	// try (and so stand in line).
	queued func(a *apptest.App) int
}

var fleetPrimitives = []fleetPrimitive{
	{
		kind: "locks",
		take: func(a *apptest.App, owner string, waitMS int) (bool, any, *apptest.Answer) {
			ans := apptest.Serve(a.E, apptest.Request(http.MethodPost, "/locks/job",
				fmt.Sprintf(`{"owner":%q,"ttl_seconds":60,"wait_ms":%d}`, owner, waitMS)))
			return ans.StatusCode == 200 && ans.Object["acquired"] == true, nil, ans
		},
		release: func(t testing.TB, a *apptest.App, owner string, _ any) {
			a.Do(t, http.MethodDelete, "/locks/job?owner="+owner, "").Want(t, http.StatusNoContent)
		},
		queued: func(a *apptest.App) int { return a.Waiter.Queued(a.Locker, "job") },
	},
	{
		kind: "semaphores with limit 1",
		take: func(a *apptest.App, owner string, waitMS int) (bool, any, *apptest.Answer) {
			ans := apptest.Serve(a.E, apptest.Request(http.MethodPost, "/semaphores/job",
				fmt.Sprintf(`{"owner":%q,"limit":1,"ttl_seconds":60,"wait_ms":%d}`, owner, waitMS)))
			return ans.StatusCode == 200 && ans.Object["acquired"] == true, nil, ans
		},
		release: func(t testing.TB, a *apptest.App, owner string, _ any) {
			a.Do(t, http.MethodDelete, "/semaphores/job?owner="+owner, "").Want(t, http.StatusNoContent)
		},
		queued: func(a *apptest.App) int { return a.Waiter.QueuedOn(a.Semaphores.Keys("", "job").Permits()) },
	},
	{
		kind: "elections",
		take: func(a *apptest.App, owner string, waitMS int) (bool, any, *apptest.Answer) {
			ans := apptest.Serve(a.E, apptest.Request(http.MethodPost, "/elections/job/campaign",
				fmt.Sprintf(`{"candidate":%q,"ttl_seconds":60,"wait_ms":%d}`, owner, waitMS)))
			var term any
			if ld, ok := ans.Object["leadership"].(map[string]any); ok {
				term = ld["term"]
			}
			return ans.StatusCode == 200 && ans.Object["leader"] == true, term, ans
		},
		release: func(t testing.TB, a *apptest.App, owner string, term any) {
			a.Do(t, http.MethodDelete, "/elections/job", fmt.Sprintf(`{"candidate":%q,"term":%.0f}`, owner, term)).Want(t, http.StatusNoContent)
		},
		queued: func(a *apptest.App) int { return a.Waiter.QueuedOn(a.Elections.Keys("", "job").Lock()) },
	},
}

// queuedIn is how many waiters stand in line across the fleet.
func queuedIn(fleet []*apptest.App, p fleetPrimitive) int {
	n := 0
	for _, a := range fleet {
		if a.Waiter != nil {
			n += p.queued(a)
		}
	}
	return n
}

// TestFleetGrantsWaitersInArrivalOrder: waiters that arrive one after the
// other through three gateways in turn are granted in the order they
// arrived, for each primitive. Each releases once granted, so the grants
// come one at a time. Per gateway, arrival order is kept anyway; across
// gateways only the line in Redis keeps it.
func TestFleetGrantsWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	const waiters = 9
	for _, p := range fleetPrimitives {
		t.Run(p.kind, func(t *testing.T) {
			t.Parallel()
			fleet := newFleet(t)
			ok, holderTerm, ans := p.take(fleet[0], "holder", 0)
			if !ok {
				t.Fatalf("holder: got %d %s, want granted", ans.StatusCode, ans.Raw)
			}
			var mu sync.Mutex
			var order []string
			var wg sync.WaitGroup
			for i := range waiters {
				owner := fmt.Sprintf("w%d", i)
				// Gateways 1, 2, 0, 1, 2, 0...: the first waiter is not on
				// the holder's gateway.
				a := fleet[(i+1)%len(fleet)]
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, term, ans := p.take(a, owner, 30000)
					if !ok {
						t.Errorf("%s: got %d %s, want granted", owner, ans.StatusCode, ans.Raw)
						return
					}
					mu.Lock()
					order = append(order, owner)
					mu.Unlock()
					p.release(t, a, owner, term)
				}()
				redistest.Eventually(t, 10*time.Second, fmt.Sprintf("%s in line", owner), func() bool { return queuedIn(fleet, p) == i+1 })
			}
			p.release(t, fleet[0], "holder", holderTerm)
			wg.Wait()
			for i, owner := range order {
				if want := fmt.Sprintf("w%d", i); owner != want {
					t.Fatalf("got grants in order %v, want w0..w%d in arrival order", order, waiters-1)
				}
			}
			if len(order) != waiters {
				t.Errorf("got %d grants (%v), want %d", len(order), order, waiters)
			}
		})
	}
}

// TestFleetSkipsTheWaiterOfADeadGateway: the first in line waits on a
// gateway that stops without leaving the line (its Waiter closed: it no
// longer keeps its ticket alive, as after kill -9). At the release the
// next in line, on another gateway, is granted once that ticket has run
// out (redislock.TicketLease), and the others after it, in order.
func TestFleetSkipsTheWaiterOfADeadGateway(t *testing.T) {
	t.Parallel()
	for _, p := range fleetPrimitives {
		t.Run(p.kind, func(t *testing.T) {
			t.Parallel()
			fleet := newFleet(t)
			ok, holderTerm, ans := p.take(fleet[0], "holder", 0)
			if !ok {
				t.Fatalf("holder: got %d %s, want granted", ans.StatusCode, ans.Raw)
			}
			type grant struct {
				owner string
				at    time.Time
			}
			owners := []string{"dead", "w1", "w2", "w3", "w4"}
			grants := make(chan grant, len(owners))
			var wg sync.WaitGroup
			defer wg.Wait()
			for i, owner := range owners {
				a := fleet[min(i, 1+(i+1)%2)] // 0, 1, 2, 1, 2
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, term, _ := p.take(a, owner, 30000)
					if ok {
						grants <- grant{owner, time.Now()}
						p.release(t, a, owner, term)
					}
				}()
				redistest.Eventually(t, 10*time.Second, owner+" in line", func() bool { return queuedIn(fleet, p) == i+1 })
			}
			fleet[0].Waiter.Close() // "dead" stays in line, not kept alive
			// Without the dead waiter's gateway: the holder releases
			// through another (it is one fleet).
			released := time.Now()
			p.release(t, fleet[1], "holder", holderTerm)
			ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
			defer cancel()
			for _, want := range owners[1:] {
				select {
				case g := <-grants:
					if g.owner != want {
						t.Fatalf("got %s granted, want %s", g.owner, want)
					}
					t.Logf("%s granted %v after the release", g.owner, g.at.Sub(released).Round(time.Millisecond))
				case <-ctx.Done():
					t.Fatalf("%s not granted within 25s of the release", want)
				}
			}
		})
	}
}

// BenchmarkFleetHandoff is the hand-off across gateways: the holder
// releases through one gateway and the waiter, which stands first in
// line on another, is granted; one op is one hand-off, timed from the
// release's call to the grant's answer (docs/waiting.md, "Cost").
//
//	go test -run XXX -bench FleetHandoff -benchtime 200x ./handlers
func BenchmarkFleetHandoff(b *testing.B) {
	for _, p := range fleetPrimitives {
		b.Run(p.kind, func(b *testing.B) {
			fleet := newFleet(b)
			ok, term, ans := p.take(fleet[0], "o0", 0)
			if !ok {
				b.Fatalf("first holder: got %d %s", ans.StatusCode, ans.Raw)
			}
			var total time.Duration
			b.ResetTimer()
			for i := range b.N {
				holder, next := fleet[i%3], fleet[(i+1)%3]
				owner := fmt.Sprintf("o%d", i+1)
				type got struct {
					ok   bool
					term any
					at   time.Time
				}
				done := make(chan got, 1)
				go func() {
					ok, term, _ := p.take(next, owner, 30000)
					done <- got{ok, term, time.Now()}
				}()
				redistest.Eventually(b, 10*time.Second, owner+" in line", func() bool { return queuedIn(fleet, p) == 1 })
				start := time.Now()
				p.release(b, holder, fmt.Sprintf("o%d", i), term)
				g := <-done
				if !g.ok {
					b.Fatalf("%s not granted", owner)
				}
				total += g.at.Sub(start)
				term = g.term
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "handoff-ms")
		})
	}
}
