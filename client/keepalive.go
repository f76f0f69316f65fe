package client

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// ErrLeaseLost: KeepAlive could not keep the lease. The error also wraps
// the cause: ErrNotFound (expired or deleted), ErrForbidden (someone else
// holds it), or the last renewal failure when renewals kept failing until
// the lease was about to expire.
var ErrLeaseLost = errors.New("leasegate: lease lost")

// KeepAliveOption configures KeepAlive.
type KeepAliveOption func(*keepAliveConfig)

type keepAliveConfig struct {
	fraction float64
	margin   time.Duration
	onRenew  func(Lease)
}

// WithRenewFraction renews every f*TTL (0 < f < 1; default 1/3).
func WithRenewFraction(f float64) KeepAliveOption {
	return func(c *keepAliveConfig) {
		if f > 0 && f < 1 {
			c.fraction = f
		}
	}
}

// WithLossMargin declares the lease lost this long before it would expire
// when renewals keep failing (default TTL/10), so work can stop while the
// lease is still valid.
func WithLossMargin(d time.Duration) KeepAliveOption {
	return func(c *keepAliveConfig) {
		if d >= 0 {
			c.margin = d
		}
	}
}

// OnRenew calls f (from KeepAlive's goroutine) after every renewal.
func OnRenew(f func(Lease)) KeepAliveOption { return func(c *keepAliveConfig) { c.onRenew = f } }

// KeepAlive renews a lease in the background until it is lost, Stop is
// called, or the parent context ends.
type KeepAlive struct {
	c      *Client
	renew  renewFunc
	cfg    keepAliveConfig
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu    sync.Mutex
	lease Lease
	err   error
}

// KeepAlive starts renewing lease every TTL*fraction (default a third).
// The lease is lost, and Done closes, when a renewal answers 404 or 403
// (or any other definite refusal), or when renewals keep failing until
// the lease is within the loss margin of its expiry, by the local clock
// from when the granting request was sent, so the signal comes while the
// lease is still valid even when the gateway or Redis is down. Context()
// ends at the same moment, with the loss as its cause.
//
// Stop ends renewing without releasing; it is not a loss (Err is
// context.Canceled).
func (c *Client) KeepAlive(ctx context.Context, lease *Lease, opts ...KeepAliveOption) *KeepAlive {
	return c.keepAlive(ctx, lease, c.renew, opts...)
}

// renewFunc renews a lease once: a lock's, or another lease kept the same
// way (a claim's, claims.go).
type renewFunc func(ctx context.Context, lease *Lease, ttl time.Duration, retry bool) (*Lease, error)

func (c *Client) keepAlive(ctx context.Context, lease *Lease, renew renewFunc, opts ...KeepAliveOption) *KeepAlive {
	cfg := keepAliveConfig{fraction: 1.0 / 3, margin: -1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.margin < 0 {
		cfg.margin = lease.TTL / 10
	}
	kctx, cancel := context.WithCancelCause(ctx)
	k := &KeepAlive{c: c, renew: renew, cfg: cfg, ctx: kctx, cancel: cancel, done: make(chan struct{}), lease: *lease}
	go k.run()
	return k
}

// Done is closed when the lease is lost or KeepAlive has stopped.
func (k *KeepAlive) Done() <-chan struct{} { return k.done }

// Context is canceled when the lease is lost (context.Cause gives the
// ErrLeaseLost error) or KeepAlive stops. Do the lease's work under it.
func (k *KeepAlive) Context() context.Context { return k.ctx }

// Err is nil while the lease is kept; after Done it is an ErrLeaseLost
// error, or the reason KeepAlive stopped (context.Canceled after Stop).
func (k *KeepAlive) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Lease is the latest renewed lease.
func (k *KeepAlive) Lease() Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lease
}

// Stop ends renewing (it does not release) and waits for the goroutine.
func (k *KeepAlive) Stop() {
	k.cancel(context.Canceled)
	<-k.done
}

func (k *KeepAlive) finish(err error) {
	k.mu.Lock()
	if k.err == nil {
		k.err = err
	}
	k.mu.Unlock()
	k.cancel(err)
	close(k.done)
}

// definite reports whether a renewal error is a refusal that retrying
// cannot change (4xx other than 429), as opposed to no answer or a
// temporary failure.
func definite(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
	}
	// A campaign's renewal that finds another leader (Lead).
	return errors.Is(err, ErrValidation) || errors.Is(err, ErrNotAcquired)
}

func (k *KeepAlive) run() {
	lease := k.Lease()
	interval := time.Duration(float64(lease.TTL) * k.cfg.fraction)
	if interval <= 0 {
		interval = time.Second
	}
	lossAt := lease.deadline().Add(-k.cfg.margin)
	next := time.Now().Add(interval)
	if !lease.localExpiry.IsZero() {
		next = lease.localExpiry.Add(-lease.TTL).Add(interval)
	}
	failures := 0
	var lastErr error
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		at := next
		if lossAt.Before(at) {
			at = lossAt
		}
		timer.Reset(time.Until(at))
		select {
		case <-k.ctx.Done():
			k.finish(context.Cause(k.ctx))
			return
		case <-timer.C:
		}
		now := time.Now()
		// Past the loss deadline with renewals failing: lost. With no
		// renewal tried since the grant or the last success (a lease
		// granted after a wait longer than its TTL, or a renewal slower
		// than TTL minus the margin), ask once instead: a renewal with
		// this token succeeds only if the lease never lapsed.
		if !now.Before(lossAt) && failures > 0 {
			k.finish(fmt.Errorf("%w: renewals failed until the lease was about to expire: %w", ErrLeaseLost, lastErr))
			return
		}
		// One attempt may take until the next would be due, and never
		// past the loss deadline: a hung request must not eat the margin.
		attemptEnd := now.Add(interval)
		if lossAt.After(now) && lossAt.Before(attemptEnd) {
			attemptEnd = lossAt
		}
		rctx, cancel := context.WithDeadline(k.ctx, attemptEnd)
		renewed, err := k.renew(rctx, &lease, lease.TTL, false)
		cancel()
		switch {
		case err == nil:
			lease = *renewed
			k.mu.Lock()
			k.lease = lease
			k.mu.Unlock()
			if k.cfg.onRenew != nil {
				k.cfg.onRenew(lease)
			}
			lossAt = lease.deadline().Add(-k.cfg.margin)
			next = lease.localExpiry.Add(-lease.TTL).Add(interval)
			failures = 0
		case k.ctx.Err() != nil:
			k.finish(context.Cause(k.ctx))
			return
		case definite(err):
			k.finish(fmt.Errorf("%w: %w", ErrLeaseLost, err))
			return
		default:
			lastErr = err
			failures++
			// Retry soon, with jittered exponential backoff from a tenth
			// of the interval, never later than a renewal would be due.
			b := min(interval/10<<min(failures-1, 10), interval)
			next = time.Now().Add(b/2 + time.Duration(mrand.Int64N(int64(b/2)+1)))
		}
	}
}
