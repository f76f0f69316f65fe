package contracttest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// SemaphoreBackend is one leasegate.SemaphoreService under test.
type SemaphoreBackend struct {
	Semaphores leasegate.SemaphoreService
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call fail at the store. Nil
	// skips the outage case.
	Outage func(t *testing.T)
}

// Semaphores runs the contract of leasegate.SemaphoreService. newBackend
// is called once per case and must return a service whose state no
// other case sees.
func Semaphores(t *testing.T, newBackend func(t *testing.T) SemaphoreBackend) {
	t.Run("permits are granted up to the limit, with increasing tokens, and Status lists them", func(t *testing.T) {
		b := newBackend(t)
		p1 := mustPermit(t, b, "pay", "w1", 3, ttl)
		p2 := mustPermit(t, b, "pay", "w2", 3, ttl)
		res := mustSemAcquire(t, b, leasegate.SemaphoreRequest{Name: "pay", Owner: "w3", TTL: ttl, Limit: 3})
		if !res.Acquired || res.Holders != 3 || res.Limit != 3 {
			t.Fatalf("got %+v, want the third permit with holders 3 limit 3", res)
		}
		if !(p1.Token > 0 && p2.Token > p1.Token && res.Permit.Token > p2.Token) {
			t.Errorf("got tokens %d %d %d, want strictly increasing", p1.Token, p2.Token, res.Permit.Token)
		}
		if got := p1.ExpiresAt.Sub(p1.AcquiredAt); got != ttl {
			t.Errorf("got expires_at - acquired_at = %v, want %v", got, ttl)
		}
		st, err := b.Semaphores.Status(t.Context(), "", "pay")
		if err != nil || st.Name != "pay" || st.Limit != 3 || len(st.Holders) != 3 {
			t.Fatalf("Status: got %+v, %v; want 3 holders of limit 3", st, err)
		}
		if !samePermit(st.Holders[0], p1) {
			t.Errorf("Status: got first holder %+v, want %+v", st.Holders[0], p1)
		}
	})

	t.Run("a full semaphore is not acquired and says when the earliest permit expires", func(t *testing.T) {
		b := newBackend(t)
		mustPermit(t, b, "full", "w1", 1, ttl)
		res := mustSemAcquire(t, b, leasegate.SemaphoreRequest{Name: "full", Owner: "w2", TTL: ttl, Limit: 1})
		if res.Acquired || res.Holders != 1 || res.Limit != 1 {
			t.Fatalf("got %+v, want not acquired with holders 1 limit 1", res)
		}
		if res.RetryAfter <= 0 || res.RetryAfter > ttl {
			t.Errorf("got RetryAfter %v, want in (0, %v]", res.RetryAfter, ttl)
		}
	})

	t.Run("the same owner re-acquiring keeps its permit and moves its expiry", func(t *testing.T) {
		b := newBackend(t)
		first := mustPermit(t, b, "again", "w1", 2, ttl)
		b.Advance(t, 10*time.Millisecond)
		res := mustSemAcquire(t, b, leasegate.SemaphoreRequest{Name: "again", Owner: "w1", TTL: 2 * ttl, Limit: 2})
		if !res.Acquired || res.Holders != 1 || res.Permit.Token != first.Token || !res.Permit.AcquiredAt.Equal(first.AcquiredAt) {
			t.Fatalf("got %+v, want the same permit (token %d) and one holder", res, first.Token)
		}
		if !res.Permit.ExpiresAt.After(first.ExpiresAt) {
			t.Errorf("got expires_at %v, want after %v", res.Permit.ExpiresAt, first.ExpiresAt)
		}
	})

	t.Run("a different limit while permits are held is limit-mismatch naming the limit in force", func(t *testing.T) {
		b := newBackend(t)
		p := mustPermit(t, b, "lim", "w1", 3, ttl)
		_, err := b.Semaphores.Acquire(t.Context(), "", leasegate.SemaphoreRequest{Name: "lim", Owner: "w2", TTL: ttl, Limit: 5})
		if !errors.Is(err, leasegate.ErrLimitMismatch) || leasegate.ErrorCode(err) != leasegate.CodeLimitMismatch {
			t.Fatalf("got %v, want ErrLimitMismatch", err)
		}
		if e, _ := leasegate.ErrorOf(err); !strings.Contains(e.Message, "3") {
			t.Errorf("got message %q, want it to name the limit in force, 3", e.Message)
		}
		mustSemRelease(t, b, "lim", "w1", p.Token)
		if res := mustSemAcquire(t, b, leasegate.SemaphoreRequest{Name: "lim", Owner: "w2", TTL: ttl, Limit: 5}); !res.Acquired || res.Limit != 5 {
			t.Errorf("after the last release: got %+v, want acquired under the new limit 5", res)
		}
	})

	t.Run("an expired permit frees its slot without any client action", func(t *testing.T) {
		b := newBackend(t)
		old := mustPermit(t, b, "exp", "w1", 1, short)
		b.Advance(t, short+beyond)
		p := mustPermit(t, b, "exp", "w2", 1, ttl)
		if p.Token <= old.Token {
			t.Errorf("got token %d, want above the expired permit's %d", p.Token, old.Token)
		}
		st, err := b.Semaphores.Status(t.Context(), "", "exp")
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Owner != "w2" {
			t.Errorf("Status: got %+v, %v; want only w2", st, err)
		}
	})

	t.Run("release answers by owner and token: released, forbidden, not found", func(t *testing.T) {
		b := newBackend(t)
		p := mustPermit(t, b, "rel", "w1", 2, ttl)
		ctx := t.Context()
		if got, err := b.Semaphores.Release(ctx, "", "rel", "w2", 0); err != nil || got != leasegate.Forbidden {
			t.Errorf("release by another owner: got %v, %v; want forbidden", got, err)
		}
		if got, err := b.Semaphores.Release(ctx, "", "rel", "w1", p.Token+1); err != nil || got != leasegate.Forbidden {
			t.Errorf("release under another token: got %v, %v; want forbidden", got, err)
		}
		mustSemRelease(t, b, "rel", "w1", p.Token)
		if got, err := b.Semaphores.Release(ctx, "", "rel", "w1", 0); err != nil || got != leasegate.NotFound {
			t.Errorf("second release: got %v, %v; want not found", got, err)
		}
		if _, err := b.Semaphores.Status(ctx, "", "rel"); !errors.Is(err, leasegate.ErrSemaphoreNotHeld) {
			t.Errorf("Status: got %v, want ErrSemaphoreNotHeld", err)
		}
	})

	t.Run("renew keeps the token and moves the expiry; others are refused", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		if _, err := b.Semaphores.Renew(ctx, "", "ren", "w1", ttl); !errors.Is(err, leasegate.ErrSemaphoreNotHeld) {
			t.Errorf("renew of nothing: got %v, want ErrSemaphoreNotHeld", err)
		}
		p := mustPermit(t, b, "ren", "w1", 2, ttl)
		got, err := b.Semaphores.Renew(ctx, "", "ren", "w1", 2*ttl)
		if err != nil || got.Token != p.Token || got.ExpiresAt.Sub(got.AcquiredAt) < 2*ttl {
			t.Errorf("renew: got %+v, %v; want token %d and expiry 2*ttl away", got, err, p.Token)
		}
		if _, err := b.Semaphores.Renew(ctx, "", "ren", "w2", ttl); !errors.Is(err, leasegate.ErrSemaphoreForbidden) {
			t.Errorf("renew by another owner: got %v, want ErrSemaphoreForbidden", err)
		}
	})

	t.Run("a waiting acquire gets the slot a holder releases", func(t *testing.T) {
		b := newBackend(t)
		held := mustPermit(t, b, "queue", "w1", 1, ttl)
		got := inBackground(func() (leasegate.SemaphoreResult, error) {
			return b.Semaphores.Acquire(t.Context(), "", leasegate.SemaphoreRequest{Name: "queue", Owner: "w2", TTL: ttl, Limit: 1, Wait: 20 * time.Second})
		})
		mustSemRelease(t, b, "queue", "w1", held.Token)
		a := <-got
		if a.err != nil || !a.res.Acquired || a.res.Permit.Owner != "w2" || a.res.Permit.Token <= held.Token {
			t.Fatalf("got %+v, %v; want acquired by w2 with a token above %d", a.res, a.err, held.Token)
		}
	})

	t.Run("a wait that ends while the semaphore is full is not acquired", func(t *testing.T) {
		b := newBackend(t)
		mustPermit(t, b, "busy", "w1", 1, ttl)
		res, err := b.Semaphores.Acquire(t.Context(), "", leasegate.SemaphoreRequest{Name: "busy", Owner: "w2", TTL: ttl, Limit: 1, Wait: 100 * time.Millisecond})
		if err != nil || res.Acquired || res.Limit != 1 {
			t.Fatalf("got %+v, %v; want not acquired, limit 1", res, err)
		}
	})

	t.Run("a store outage is ErrUnavailable and grants nothing", func(t *testing.T) {
		b := newBackend(t)
		needOutage(t, b.Outage)
		b.Outage(t)
		ctx := t.Context()
		res, err := b.Semaphores.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: "down", Owner: "w1", TTL: ttl, Limit: 1})
		if !errors.Is(err, leasegate.ErrUnavailable) || res.Acquired {
			t.Errorf("Acquire: got %+v, %v; want ErrUnavailable", res, err)
		}
		wantUnavailable(t, []storeCall{
			{"Status", func() error { _, err := b.Semaphores.Status(ctx, "", "down"); return err }},
			{"Release", func() error { _, err := b.Semaphores.Release(ctx, "", "down", "w1", 0); return err }},
		})
	})
}

func mustSemAcquire(t *testing.T, b SemaphoreBackend, req leasegate.SemaphoreRequest) leasegate.SemaphoreResult {
	t.Helper()
	res, err := b.Semaphores.Acquire(t.Context(), "", req)
	if err != nil {
		t.Fatalf("Acquire(%+v): %v", req, err)
	}
	return res
}

func mustPermit(t *testing.T, b SemaphoreBackend, name, owner string, limit int, ttl time.Duration) leasegate.Permit {
	t.Helper()
	res := mustSemAcquire(t, b, leasegate.SemaphoreRequest{Name: name, Owner: owner, TTL: ttl, Limit: limit})
	if !res.Acquired {
		t.Fatalf("Acquire(%q, %q): got %+v, want acquired", name, owner, res)
	}
	if res.Permit.Name != name || res.Permit.Owner != owner {
		t.Fatalf("Acquire(%q, %q): got permit %+v", name, owner, res.Permit)
	}
	return res.Permit
}

func mustSemRelease(t *testing.T, b SemaphoreBackend, name, owner string, token int64) {
	t.Helper()
	got, err := b.Semaphores.Release(t.Context(), "", name, owner, token)
	if err != nil || got != leasegate.Released {
		t.Fatalf("Release(%q, %q, %d): got %v, %v; want released", name, owner, token, got, err)
	}
}

func samePermit(a, b leasegate.Permit) bool {
	return a.Name == b.Name && a.Owner == b.Owner && a.Token == b.Token &&
		a.AcquiredAt.Equal(b.AcquiredAt) && a.ExpiresAt.Equal(b.ExpiresAt)
}
