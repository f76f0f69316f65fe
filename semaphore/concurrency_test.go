package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// interval is one permit as the history records it, in Redis-clock
// milliseconds: from its acquired_at to its end, which is its expires_at
// for a holder that crashed, and for one that released a Redis TIME read
// just before the release (a lower bound of the true end, so the check
// never blames an overlap on a late reading).
type interval struct {
	owner      string
	token      int64
	start, end int64
}

// N permits are never exceeded: 200 acquirers wait for a permit of a
// semaphore of limit 5, hold it a random while, and either release it or
// crash (keep it until it expires). At every grant, the permits of the
// recorded history that are live must number at most 5, and tokens must
// be unique and increase with grant time.
func TestNPermitsAreNeverExceededUnderConcurrentAcquirersWithCrashes(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		if b.Mini != nil {
			// miniredis follows the wall clock here, so permits expire
			// by themselves as on a real server.
			b.RealClock()
		}
		const (
			limit     = 5
			acquirers = 200
			ttl       = 300 * time.Millisecond
		)
		rdb := b.RDB
		svc := newService(t, contracttest.Store{RDB: rdb})
		ctx := context.Background()

		var mu sync.Mutex
		var history []interval
		var wg sync.WaitGroup
		errs := make(chan error, acquirers)
		for i := range acquirers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprintf("w%d", i)
				res, err := svc.Acquire(ctx, "", leasegate.SemaphoreRequest{
					Name: "provider", Owner: owner, TTL: ttl, Limit: limit, Wait: 60 * time.Second})
				if err != nil || !res.Acquired {
					errs <- fmt.Errorf("%s: got %+v, %v; want a permit", owner, res, err)
					return
				}
				if res.Holders > limit {
					errs <- fmt.Errorf("%s: got holders %d, want at most %d", owner, res.Holders, limit)
				}
				p := res.Permit
				iv := interval{owner: owner, token: p.Token, start: p.AcquiredAt.UnixMilli(), end: p.ExpiresAt.UnixMilli()}
				time.Sleep(time.Duration(rand.IntN(10)) * time.Millisecond) // the work the permit guards
				if rand.IntN(5) > 0 {
					now, err := rdb.Time(ctx).Result()
					if err != nil {
						errs <- err
						return
					}
					iv.end = min(iv.end, now.UnixMilli())
					// On a loaded machine the permit may have expired
					// before the release: then it is NotFound when no
					// permit is left, Forbidden when others hold one.
					got, err := svc.Release(ctx, "", "provider", owner, p.Token)
					if err != nil || got == 0 {
						errs <- fmt.Errorf("%s: release got %v, %v", owner, got, err)
					}
				} // else: crashed; the permit expires by itself
				mu.Lock()
				history = append(history, iv)
				mu.Unlock()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if len(history) != acquirers {
			t.Fatalf("got %d grants, want %d", len(history), acquirers)
		}
		checkHistory(t, history, limit)
	})
}

// checkHistory fails when more than limit intervals are live at any
// grant, or when tokens repeat or do not increase with grant time.
func checkHistory(t *testing.T, h []interval, limit int) {
	t.Helper()
	sort.Slice(h, func(i, j int) bool { return h[i].token < h[j].token })
	for i := 1; i < len(h); i++ {
		if h[i].token == h[i-1].token {
			t.Errorf("token %d handed to %s and %s", h[i].token, h[i-1].owner, h[i].owner)
		}
		if h[i].start < h[i-1].start {
			t.Errorf("token %d (%s) granted at %d, before token %d at %d", h[i].token, h[i].owner, h[i].start, h[i-1].token, h[i-1].start)
		}
	}
	worst := 0
	for _, g := range h {
		live := 0
		for _, o := range h {
			if o.start <= g.start && g.start < o.end {
				live++
			}
		}
		worst = max(worst, live)
		if live > limit {
			t.Errorf("at %s's grant (%d ms) %d permits were live, want at most %d", g.owner, g.start, live, limit)
		}
	}
	t.Logf("%d grants, at most %d live at once (limit %d)", len(h), worst, limit)
}

func TestTenantsHaveTheirOwnSemaphores(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		svc := newService(t, s)
		ctx := t.Context()
		req := leasegate.SemaphoreRequest{Name: "pay", Owner: "w1", TTL: time.Minute, Limit: 1}
		a, err := svc.Acquire(ctx, "acme", req)
		if err != nil || !a.Acquired {
			t.Fatalf("acme: got %+v, %v", a, err)
		}
		req.Owner, req.Limit = "w2", 2 // another limit too: tenants do not share one
		b, err := svc.Acquire(ctx, "globex", req)
		if err != nil || !b.Acquired || b.Holders != 1 {
			t.Fatalf("globex: got %+v, %v; want its own first permit", b, err)
		}
		if _, err := svc.Status(ctx, "", "pay"); !errors.Is(err, leasegate.ErrSemaphoreNotHeld) {
			t.Errorf("tenant \"\": got %v, want ErrSemaphoreNotHeld", err)
		}
		if got, err := svc.Release(ctx, "globex", "pay", "w1", 0); err != nil || got != leasegate.Forbidden {
			t.Errorf("acme's owner in globex: got %v, %v; want forbidden", got, err)
		}
	})
}

func TestAcquireRefusesALimitOrTTLOutOfRange(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		svc := newService(t, s)
		for _, req := range []leasegate.SemaphoreRequest{
			{Name: "x", Owner: "o", TTL: time.Second, Limit: 0},
			{Name: "x", Owner: "o", TTL: time.Second, Limit: leasegate.MaxSemaphoreLimit + 1},
			{Name: "x", Owner: "o", TTL: 0, Limit: 1},
		} {
			if res, err := svc.Acquire(t.Context(), "", req); err == nil || res.Acquired {
				t.Errorf("%+v: got %+v, %v; want an error", req, res, err)
			}
		}
	})
}
