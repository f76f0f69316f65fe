package contracttest

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// ClaimBackend is one leasegate.ClaimService under test.
type ClaimBackend struct {
	Claims leasegate.ClaimService
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call fail at the store. Nil
	// skips the outage case.
	Outage func(t *testing.T)
}

// Claims runs the contract of leasegate.ClaimService. newBackend is
// called once per case and must return a service whose state no other
// case sees.
func Claims(t *testing.T, newBackend func(t *testing.T) ClaimBackend) {
	const scope = "daily-checkin"
	req := func(key, owner string, ttl time.Duration) leasegate.ClaimRequest {
		return leasegate.ClaimRequest{Scope: scope, Key: key, Owner: owner, TTL: ttl}
	}

	t.Run("a free claim is created pending with a token and Get shows it", func(t *testing.T) {
		b := newBackend(t)
		c := mustClaim(t, b, req("k", "w1", ttl))
		if c.Scope != scope || c.Key != "k" || c.Owner != "w1" || c.Token <= 0 || c.ExpiresAt.Sub(c.ClaimedAt) != ttl {
			t.Errorf("got %+v, want k held by w1 for %v with a token", c, ttl)
		}
		got, err := b.Claims.Get(t.Context(), "", scope, "k")
		if err != nil || got.State != leasegate.ClaimPending || got.Claim.Token != c.Token || got.Claim.Owner != "w1" {
			t.Errorf("Get: got %+v, %v; want pending under token %d", got, err, c.Token)
		}
	})

	t.Run("another owner is told the claim is in progress, with a retry-after", func(t *testing.T) {
		b := newBackend(t)
		mustClaim(t, b, req("busy", "w1", ttl))
		_, err := b.Claims.Claim(t.Context(), "", req("busy", "w2", ttl))
		if !errors.Is(err, leasegate.ErrClaimInProgress) {
			t.Fatalf("got %v, want ErrClaimInProgress", err)
		}
		if e, _ := leasegate.ErrorOf(err); e.Code != leasegate.CodeClaimInProgress || e.RetryAfter <= 0 || e.RetryAfter > ttl+time.Second {
			t.Errorf("got code %q retry after %v, want claim-in-progress within (0, %v]", e.Code, e.RetryAfter, ttl+time.Second)
		}
	})

	t.Run("the same owner claiming again gets the same claim with a later expiry", func(t *testing.T) {
		b := newBackend(t)
		c := mustClaim(t, b, req("again", "w1", ttl))
		res, err := b.Claims.Claim(t.Context(), "", req("again", "w1", 2*ttl))
		if err != nil || res.State != leasegate.ClaimPending || res.Created || res.Claim.Token != c.Token || !res.Claim.ExpiresAt.After(c.ExpiresAt) {
			t.Errorf("got %+v, %v; want the same pending claim (token %d), not created, expiring later", res, err, c.Token)
		}
	})

	t.Run("complete stores the result byte for byte and every later claim answers it", func(t *testing.T) {
		b := newBackend(t)
		c := mustClaim(t, b, req("pay", "w1", ttl))
		result := []byte(`{"coins": 10,  "note":"caf\u00e9", "list":[1, 2.50]}`)
		done := mustComplete(t, b, c, result)
		if !bytes.Equal(done.Result, result) || done.Token != c.Token || done.CompletedAt.IsZero() {
			t.Errorf("Complete: got %+v, want result %s under token %d", done, result, c.Token)
		}
		for _, owner := range []string{"w1", "w2"} {
			res, err := b.Claims.Claim(t.Context(), "", req("pay", owner, ttl))
			if err != nil || res.State != leasegate.ClaimDone || !bytes.Equal(res.Result, result) || res.Token != c.Token || !res.CompletedAt.Equal(done.CompletedAt) {
				t.Errorf("claim by %s after completion: got %+v, %v; want done with %s", owner, res, err, result)
			}
		}
		got, err := b.Claims.Get(t.Context(), "", scope, "pay")
		if err != nil || got.State != leasegate.ClaimDone || !bytes.Equal(got.Result, result) {
			t.Errorf("Get: got %+v, %v; want done with %s", got, err, result)
		}
	})

	t.Run("completing twice with the same token and result is idempotent; another result is refused", func(t *testing.T) {
		b := newBackend(t)
		c := mustClaim(t, b, req("twice", "w1", ttl))
		first := mustComplete(t, b, c, []byte(`"ok"`))
		again := mustComplete(t, b, c, []byte(`"ok"`))
		if !again.CompletedAt.Equal(first.CompletedAt) || again.Token != first.Token {
			t.Errorf("got %+v, want the first completion %+v", again, first)
		}
		_, err := b.Claims.Complete(t.Context(), "", leasegate.CompleteRequest{Scope: scope, Key: "twice", Owner: "w1", Token: c.Token, Result: []byte(`"other"`)})
		if !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("complete with another result: got %v, want ErrClaimForbidden", err)
		}
	})

	t.Run("complete checks owner and token; nothing pending is not found", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		cr := func(key, owner string, token int64) leasegate.CompleteRequest {
			return leasegate.CompleteRequest{Scope: scope, Key: key, Owner: owner, Token: token, Result: []byte(`1`)}
		}
		if _, err := b.Claims.Complete(ctx, "", cr("none", "w1", 1)); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("complete of nothing: got %v, want ErrClaimNotFound", err)
		}
		c := mustClaim(t, b, req("chk", "w1", ttl))
		if _, err := b.Claims.Complete(ctx, "", cr("chk", "w2", c.Token)); !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("complete by another owner: got %v, want ErrClaimForbidden", err)
		}
		if _, err := b.Claims.Complete(ctx, "", cr("chk", "w1", c.Token+1)); !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("complete under another token: got %v, want ErrClaimForbidden", err)
		}
	})

	t.Run("an expired lease can be claimed again with a larger token, and the stale worker cannot complete", func(t *testing.T) {
		b := newBackend(t)
		old := mustClaim(t, b, req("crash", "w1", short))
		b.Advance(t, short+beyond)
		if _, err := b.Claims.Get(t.Context(), "", scope, "crash"); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("Get after expiry: got %v, want ErrClaimNotFound", err)
		}
		next := mustClaim(t, b, req("crash", "w2", ttl))
		if next.Token <= old.Token {
			t.Errorf("got token %d, want above the expired claim's %d", next.Token, old.Token)
		}
		_, err := b.Claims.Complete(t.Context(), "", leasegate.CompleteRequest{Scope: scope, Key: "crash", Owner: "w1", Token: old.Token, Result: []byte(`"stale"`)})
		if !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("stale complete: got %v, want ErrClaimForbidden", err)
		}
		done := mustComplete(t, b, next, []byte(`"fresh"`))
		if string(done.Result) != `"fresh"` {
			t.Errorf("got result %s, want \"fresh\"", done.Result)
		}
	})

	t.Run("abandon lets another caller claim at once with a larger token", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		if err := b.Claims.Abandon(ctx, "", scope, "ab", "w1", 1); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("abandon of nothing: got %v, want ErrClaimNotFound", err)
		}
		c := mustClaim(t, b, req("ab", "w1", ttl))
		if err := b.Claims.Abandon(ctx, "", scope, "ab", "w1", c.Token+1); !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("abandon under another token: got %v, want ErrClaimForbidden", err)
		}
		if err := b.Claims.Abandon(ctx, "", scope, "ab", "w1", c.Token); err != nil {
			t.Fatalf("Abandon: %v", err)
		}
		next := mustClaim(t, b, req("ab", "w2", ttl))
		if next.Token <= c.Token {
			t.Errorf("got token %d, want above %d", next.Token, c.Token)
		}
		mustComplete(t, b, next, []byte(`true`))
		if err := b.Claims.Abandon(ctx, "", scope, "ab", "w2", next.Token); !errors.Is(err, leasegate.ErrClaimForbidden) {
			t.Errorf("abandon of a done claim: got %v, want ErrClaimForbidden", err)
		}
	})

	t.Run("a done claim expires after keep and can then be claimed anew", func(t *testing.T) {
		b := newBackend(t)
		c := mustClaim(t, b, req("keep", "w1", ttl))
		if _, err := b.Claims.Complete(t.Context(), "", leasegate.CompleteRequest{Scope: scope, Key: "keep", Owner: "w1", Token: c.Token, Result: []byte(`1`), Keep: short}); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		b.Advance(t, short+beyond)
		if _, err := b.Claims.Get(t.Context(), "", scope, "keep"); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("Get after keep: got %v, want ErrClaimNotFound", err)
		}
		if res, err := b.Claims.Claim(t.Context(), "", req("keep", "w2", ttl)); err != nil || !res.Created {
			t.Errorf("claim after keep: got %+v, %v; want a new pending claim", res, err)
		}
	})

	t.Run("an operator removes a done claim; nothing there is not found", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		meta := leasegate.RequestMeta{Operator: "ops-key"}
		if _, err := b.Claims.Remove(ctx, "", scope, "gone", "test", meta); !errors.Is(err, leasegate.ErrClaimNotFound) {
			t.Errorf("remove of nothing: got %v, want ErrClaimNotFound", err)
		}
		c := mustClaim(t, b, req("gone", "w1", ttl))
		mustComplete(t, b, c, []byte(`1`))
		if st, err := b.Claims.Remove(ctx, "", scope, "gone", "paid twice by mistake", meta); err != nil || st != leasegate.ClaimDone {
			t.Fatalf("Remove: got %v, %v; want done removed", st, err)
		}
		if res, err := b.Claims.Claim(ctx, "", req("gone", "w2", ttl)); err != nil || !res.Created {
			t.Errorf("claim after removal: got %+v, %v; want a new pending claim", res, err)
		}
	})

	t.Run("a store outage is ErrUnavailable and changes nothing", func(t *testing.T) {
		b := newBackend(t)
		needOutage(t, b.Outage)
		b.Outage(t)
		ctx := t.Context()
		wantUnavailable(t, []storeCall{
			{"Claim", func() error { _, err := b.Claims.Claim(ctx, "", req("down", "w1", ttl)); return err }},
			{"Get", func() error { _, err := b.Claims.Get(ctx, "", scope, "down"); return err }},
		})
	})
}

func mustClaim(t *testing.T, b ClaimBackend, req leasegate.ClaimRequest) leasegate.Claim {
	t.Helper()
	res, err := b.Claims.Claim(t.Context(), "", req)
	if err != nil {
		t.Fatalf("Claim(%+v): %v", req, err)
	}
	if res.State != leasegate.ClaimPending || !res.Created {
		t.Fatalf("Claim(%+v): got %+v, want a new pending claim", req, res)
	}
	return res.Claim
}

func mustComplete(t *testing.T, b ClaimBackend, c leasegate.Claim, result []byte) leasegate.ClaimResult {
	t.Helper()
	res, err := b.Claims.Complete(t.Context(), "", leasegate.CompleteRequest{Scope: c.Scope, Key: c.Key, Owner: c.Owner, Token: c.Token, Result: result})
	if err != nil {
		t.Fatalf("Complete(%s/%s): %v", c.Scope, c.Key, err)
	}
	if res.State != leasegate.ClaimDone {
		t.Fatalf("Complete(%s/%s): got %+v, want done", c.Scope, c.Key, res)
	}
	return res
}
