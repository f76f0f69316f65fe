package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
)

// TestKeepAliveKeepsATwoSecondLeaseForFiveSeconds: renewals carry a
// short lease well past several of its TTLs. Two seconds, not one: a
// renewal gets a third of the TTL and the lease is given up a tenth
// before its end, so on a loaded 2-core machine under the race detector
// a one-second lease was lost, correctly, to renewals that took over
// 333 ms.
func TestKeepAliveKeepsATwoSecondLeaseForFiveSeconds(t *testing.T) {
	t.Parallel()
	g := newMiniGateway(t)
	c, lease := g.acquire(t, "job", 2*time.Second)
	ctx := context.Background()
	// Wait on the renewals themselves, not on a 5 s sleep: done once the
	// kept lease runs 5 s past the first one's expiry (real time passes,
	// the client's clock is the machine's); 30 s only guards a hang.
	renewed := make(chan client.Lease, 64)
	k := c.KeepAlive(ctx, lease, client.OnRenew(func(l client.Lease) {
		select {
		case renewed <- l:
		default:
		}
	}))
	guard := time.After(30 * time.Second)
	for kept := lease.ExpiresAt; kept.Before(lease.ExpiresAt.Add(5 * time.Second)); {
		select {
		case l := <-renewed:
			kept = l.ExpiresAt
		case <-k.Done():
			t.Fatalf("lease lost: %v", k.Err())
		case <-guard:
			t.Fatalf("lease kept only to %v within 30s, want 5s past %v", kept, lease.ExpiresAt)
		}
	}
	st, err := c.Status(ctx, "job")
	if err != nil || st.Token != lease.Token || st.Owner != lease.Owner {
		t.Fatalf("after 5s got %+v, %v; want still held with token %d", st, err, lease.Token)
	}
	if _, err := c.Acquire(ctx, "job", time.Second); !errors.Is(err, client.ErrNotAcquired) {
		t.Fatalf("another owner got %v, want ErrNotAcquired", err)
	}
	k.Stop()
	if !errors.Is(k.Err(), context.Canceled) || errors.Is(k.Err(), client.ErrLeaseLost) {
		t.Errorf("after Stop got %v, want context.Canceled and not a loss", k.Err())
	}
	if err := c.Release(ctx, lease); err != nil {
		t.Errorf("release after stop: %v", err)
	}
}

func TestKeepAliveSignalsLossWhenTheLeaseIsTaken(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		take  func(g *lockGateway)
		cause error
	}{
		{"the key is deleted", func(g *lockGateway) { g.mini.Del(g.lockKey("job")) }, client.ErrNotFound},
		{"another owner holds it", func(g *lockGateway) { g.mini.HSet(g.lockKey("job"), "owner", "intruder") }, client.ErrForbidden},
	}
	for _, tc := range cases {
		t.Run("loss is signalled before expiry when "+tc.name, func(t *testing.T) {
			g := newMiniGateway(t)
			c, lease := g.acquire(t, "job", 2*time.Second)
			ctx := context.Background()
			k := c.KeepAlive(ctx, lease)
			tc.take(g)
			select {
			case <-k.Done():
			case <-time.After(10 * time.Second):
				// A hang guard; that the signal came before expiry is
				// checked next.
				t.Fatal("no loss signal within 10s")
			}
			if now := time.Now(); !now.Before(k.Lease().ExpiresAt) {
				t.Errorf("loss signalled at %v, after the lease's expiry %v", now, k.Lease().ExpiresAt)
			}
			if !errors.Is(k.Err(), client.ErrLeaseLost) || !errors.Is(k.Err(), tc.cause) {
				t.Errorf("got %v, want ErrLeaseLost caused by %v", k.Err(), tc.cause)
			}
			if cause := context.Cause(k.Context()); !errors.Is(cause, client.ErrLeaseLost) {
				t.Errorf("got context cause %v, want ErrLeaseLost", cause)
			}
		})
	}
}

func TestKeepAliveSignalsLossBeforeExpiryWhenRedisDies(t *testing.T) {
	t.Parallel()
	g := newRealGateway(t)
	// A 3 s lease, not 1 s: the first renewal (at a third of the TTL) must
	// be answered before the loss margin even on a loaded machine; with
	// 1 s it had about 570 ms, and `go test -p 4` on 2 cores lost it.
	c, lease := g.acquire(t, "job", 3*time.Second)
	ctx := context.Background()
	renewed := make(chan struct{}, 1)
	k := c.KeepAlive(ctx, lease, client.OnRenew(func(client.Lease) {
		select {
		case renewed <- struct{}{}:
		default:
		}
	}))
	// Let it renew once, then kill Redis.
	select {
	case <-renewed:
	case <-k.Done():
		t.Fatalf("lost before the kill: %v", k.Err())
	}
	g.server.Kill()
	killed := time.Now()
	select {
	case <-k.Done():
	case <-time.After(10 * time.Second):
		// A hang guard; that the signal came before expiry is checked next.
		t.Fatal("no loss signal within 10s of Redis dying")
	}
	now := time.Now()
	exp := k.Lease().ExpiresAt
	t.Logf("loss signalled %v after the kill, %v before the lease's expiry", now.Sub(killed), exp.Sub(now))
	if !now.Before(exp) {
		t.Errorf("loss signalled at %v, not before the lease's expiry %v", now, exp)
	}
	if !errors.Is(k.Err(), client.ErrLeaseLost) {
		t.Errorf("got %v, want ErrLeaseLost", k.Err())
	}
}

// A lease granted after a wait longer than its TTL is fresh, but the
// request that got it was sent more than a TTL ago. KeepAlive must ask the
// gateway (one renewal) instead of declaring it lost without trying; the
// CLI does exactly this (Acquire WithWait, then KeepAlive).
func TestKeepAliveKeepsALeaseThatWasWaitedForLongerThanItsTTL(t *testing.T) {
	t.Parallel()
	g := newMiniGateway(t)
	c := g.client()
	ctx := context.Background()
	if _, err := c.Acquire(ctx, "job", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	// Granted when the holder's 2 s lease expires: about 2 s after this
	// 1 s request was sent.
	lease, err := c.Acquire(ctx, "job", time.Second, client.WithWait(10*time.Second))
	if err != nil {
		t.Fatalf("waiting acquire: %v", err)
	}
	renewed := make(chan struct{}, 1)
	k := c.KeepAlive(ctx, lease, client.OnRenew(func(client.Lease) {
		select {
		case renewed <- struct{}{}:
		default:
		}
	}))
	defer k.Stop()
	select {
	case <-renewed:
	case <-k.Done():
		t.Fatalf("got %v before any renewal, want the fresh lease renewed", k.Err())
	case <-time.After(15 * time.Second):
		t.Fatal("no renewal and no loss within 15s")
	}
	st, err := c.Status(ctx, "job")
	if err != nil || st.Token != lease.Token || st.Owner != lease.Owner {
		t.Fatalf("got %+v, %v; want still held with token %d", st, err, lease.Token)
	}
}
