package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/leasegate/leasegate"
)

// ErrNotAcquired: another owner holds the lock (and any wait ended). The
// error is a *NotAcquiredError; errors.As gives its RetryAfter.
var ErrNotAcquired = errors.New("leasegate: not acquired")

// NotAcquiredError is Acquire's answer when another owner holds the lock.
type NotAcquiredError struct {
	Resource string
	// RetryAfter is how long the holder's lease has left (Redis clock).
	RetryAfter time.Duration
}

func (e *NotAcquiredError) Error() string {
	return fmt.Sprintf("leasegate: %q is held by another owner; retry after %v", e.Resource, e.RetryAfter)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

// Lease is a held lock.
type Lease struct {
	Resource string
	Owner    string
	// Token is the fencing token: pass it to every downstream write and
	// have the store refuse tokens lower than the highest it has seen.
	// In a Lease built by hand, 0 means any token of Owner (Renew and
	// Release then act on whatever lease Owner holds).
	Token      int64
	AcquiredAt time.Time
	// ExpiresAt is by the gateway's Redis clock.
	ExpiresAt time.Time
	// TTL is the lease time asked for; Renew and KeepAlive reuse it.
	TTL time.Duration

	// localExpiry is when the lease ends at the latest by this process's
	// clock: the time the granting request was sent plus TTL. KeepAlive
	// uses it so clock skew to the Redis server does not matter.
	localExpiry time.Time
}

// deadline is the lease's end by the local clock (ExpiresAt for a Lease
// built by hand).
func (l *Lease) deadline() time.Time {
	if !l.localExpiry.IsZero() {
		return l.localExpiry
	}
	return l.ExpiresAt
}

// lease is the lock of an answer as a Lease asked for ttl, granted by
// the request sent at sent.
func (h HeldLock) lease(ttl time.Duration, sent time.Time) *Lease {
	return &Lease{
		Resource: h.Resource, Owner: h.Owner, Token: h.Token,
		AcquiredAt: h.AcquiredAt, ExpiresAt: h.ExpiresAt,
		TTL: ttl, localExpiry: sent.Add(ttl),
	}
}

// AcquireOption configures one Acquire.
type AcquireOption func(*acquireOptions)

type acquireOptions struct {
	owner string
	wait  time.Duration
	// lockDelay is sent as lock_delay_ms when lockDelaySet (unset: the
	// gateway's --default-lock-delay).
	lockDelay    time.Duration
	lockDelaySet bool
}

// WithOwner names the holder. The default is a fresh "host:pid:random" per
// call. An owner must be unique to one holder: two holders sharing an owner
// share the lease (same-owner re-acquire succeeds), and Acquire's retries
// are safe only because the owner is unique (docs/client.md).
func WithOwner(owner string) AcquireOption { return func(o *acquireOptions) { o.owner = owner } }

// acquireOpts applies opts; the owner defaults to a fresh DefaultOwner.
func acquireOpts(opts []AcquireOption) acquireOptions {
	var o acquireOptions
	for _, f := range opts {
		f(&o)
	}
	if o.owner == "" {
		o.owner = DefaultOwner()
	}
	return o
}

// acquireBody is the body of an acquire: owner, ttl_seconds and, when
// the gateway should wait, wait_ms.
func (o acquireOptions) acquireBody(secs int64) map[string]any {
	body := map[string]any{"owner": o.owner, "ttl_seconds": secs}
	if o.wait > 0 {
		body["wait_ms"] = o.wait.Milliseconds()
	}
	return body
}

// lockAcquireBody checks ttl and opts of a lock's or a lock set's acquire
// and builds its body: acquireBody's fields and lock_delay_ms.
func lockAcquireBody(ttl time.Duration, opts []AcquireOption) (map[string]any, error) {
	o := acquireOpts(opts)
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, err
	}
	if o.wait < 0 {
		return nil, invalid("wait", fmt.Sprintf("%v must not be negative", o.wait))
	}
	body := o.acquireBody(secs)
	if err := o.addLockDelay(body); err != nil {
		return nil, err
	}
	return body, nil
}

// addLockDelay puts lock_delay_ms in body when WithLockDelay was given.
func (o acquireOptions) addLockDelay(body map[string]any) error {
	if !o.lockDelaySet {
		return nil
	}
	d := o.lockDelay
	if d < 0 || d > leasegate.MaxLockDelay || d%time.Millisecond != 0 {
		return invalid("lock delay", fmt.Sprintf("%v must be whole milliseconds from 0 to %v", d, leasegate.MaxLockDelay))
	}
	body["lock_delay_ms"] = d.Milliseconds()
	return nil
}

// ownerBody names owner and, unless it is 0 (any token of owner), token.
func ownerBody(owner string, token int64) map[string]any {
	body := map[string]any{"owner": owner}
	if token != 0 {
		body["token"] = token
	}
	return body
}

// WithWait makes the gateway wait up to d for the lock (wait_ms) when
// another owner holds it, instead of answering at once.
func WithWait(d time.Duration) AcquireOption { return func(o *acquireOptions) { o.wait = d } }

// WithLockDelay asks for a lock delay (lock_delay_ms, whole
// milliseconds, 0..1m): should this lease end by expiry rather than by a
// release, no other owner gets the lock until d after it expired
// (docs/fencing.md, "Lock delay"). Without it the gateway applies its
// --default-lock-delay; WithLockDelay(0) asks for none. Locks only.
func WithLockDelay(d time.Duration) AcquireOption {
	return func(o *acquireOptions) { o.lockDelay, o.lockDelaySet = d, true }
}

// DefaultOwner returns "host:pid:random", unique per call.
func DefaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

func lockPath(resource string) string { return "/locks/" + url.PathEscape(resource) }

// ttlSeconds converts a ttl to the contract's whole seconds.
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl < time.Second || ttl%time.Second != 0 {
		return 0, invalid("ttl", fmt.Sprintf("%v must be a whole number of seconds, at least 1s", ttl))
	}
	return int64(ttl / time.Second), nil
}

// Acquire takes the lock on resource for ttl (whole seconds). It returns
// the Lease, or an error matching ErrNotAcquired (a *NotAcquiredError)
// when another owner holds it. Transport failures and 502/503/504 answers
// are retried with backoff: re-sending is safe because the owner is the
// same on every attempt and a same-owner acquire is idempotent (it keeps
// the token), so a retry never grants the lock twice.
func (c *Client) Acquire(ctx context.Context, resource string, ttl time.Duration, opts ...AcquireOption) (*Lease, error) {
	body, err := lockAcquireBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	var out struct {
		Acquired     bool     `json:"acquired"`
		Lock         HeldLock `json:"lock"`
		Resource     string   `json:"resource"`
		RetryAfterMS int64    `json:"retry_after_ms"`
	}
	_, sent, err := c.call(ctx, http.MethodPost, lockPath(resource), body, &out)
	if err != nil {
		return nil, err
	}
	if !out.Acquired {
		return nil, &NotAcquiredError{Resource: resource, RetryAfter: time.Duration(out.RetryAfterMS) * time.Millisecond}
	}
	return out.Lock.lease(ttl, sent), nil
}

// Renew moves the lease's expiry to now+ttl (ttl 0: the lease's TTL),
// keeping its token, and returns the renewed lease. leasegate.ErrLockNotHeld
// (and ErrNotFound): it has expired or is gone; leasegate.ErrLockForbidden
// (and ErrForbidden): someone else holds the lock now.
// Renewing is idempotent, so failures without an answer are retried.
func (c *Client) Renew(ctx context.Context, lease *Lease, ttl time.Duration) (*Lease, error) {
	return c.renew(ctx, lease, ttl, true)
}

func (c *Client) renew(ctx context.Context, lease *Lease, ttl time.Duration, retry bool) (*Lease, error) {
	if ttl == 0 {
		ttl = lease.TTL
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, err
	}
	body := ownerBody(lease.Owner, lease.Token)
	body["ttl_seconds"] = secs
	var out struct {
		Lock HeldLock `json:"lock"`
	}
	var sent time.Time
	op := func() error {
		sent = time.Now()
		_, err := c.do(ctx, http.MethodPost, lockPath(lease.Resource)+"/renew", body, &out)
		return err
	}
	if err := c.attempt(ctx, retry, op); err != nil {
		return nil, answerFor(err, leasegate.ErrLockNotHeld, leasegate.ErrLockForbidden)
	}
	return out.Lock.lease(ttl, sent), nil
}

// Release ends the lease (only this token of it). leasegate.ErrLockNotHeld
// (and ErrNotFound): it had already expired; leasegate.ErrLockForbidden
// (and ErrForbidden): someone else holds the lock now. A
// release whose first attempt got no definite answer (none at all, or a
// 502/503/504, which a proxy also sends when the gateway answered too
// late) is retried; if the retry then finds no lease, the first attempt is
// taken to have worked and Release returns nil.
func (c *Client) Release(ctx context.Context, lease *Lease) error {
	return answerFor(c.release(ctx, lockPath(lease.Resource), ownerBody(lease.Owner, lease.Token)),
		leasegate.ErrLockNotHeld, leasegate.ErrLockForbidden)
}

// release sends the DELETE at path that ends a lease (a lock's, a
// permit, a claim). A release whose first attempt got no definite answer
// is retried; if the retry then finds nothing, the first attempt is
// taken to have worked and release returns nil.
func (c *Client) release(ctx context.Context, path string, body map[string]any) error {
	unanswered := false
	return c.retry(ctx, func() error {
		_, err := c.do(ctx, http.MethodDelete, path, body, nil)
		if unanswered && errors.Is(err, ErrNotFound) {
			return nil
		}
		unanswered = unanswered || (err != nil && retryable(err))
		return err
	})
}

// Status returns the live lease on resource, or leasegate.ErrLockNotHeld
// (and ErrNotFound).
func (c *Client) Status(ctx context.Context, resource string) (*Lease, error) {
	var out struct {
		Lock HeldLock `json:"lock"`
	}
	if _, _, err := c.call(ctx, http.MethodGet, lockPath(resource), nil, &out); err != nil {
		return nil, answerFor(err, leasegate.ErrLockNotHeld)
	}
	l := out.Lock.lease(0, time.Time{})
	l.localExpiry = time.Time{}
	return l, nil
}

// RetryPolicy says how requests that got no definite answer are retried.
type RetryPolicy struct {
	// Attempts is the most tries in all (1 = no retry). Default 4.
	Attempts int
	// Base is the first backoff; each retry doubles it up to Max, and the
	// actual sleep is drawn uniformly from [0, backoff] (full jitter), but
	// never below a Retry-After the gateway sent (up to Max).
	Base, Max time.Duration
}

// DefaultRetryPolicy is used unless WithRetryPolicy says otherwise.
var DefaultRetryPolicy = RetryPolicy{Attempts: 4, Base: 100 * time.Millisecond, Max: 2 * time.Second}

// WithRetryPolicy sets how the client retries; RetryPolicy{Attempts: 1}
// turns retries off.
func WithRetryPolicy(p RetryPolicy) Option { return func(c *Client) { c.retryPolicy = &p } }

// retryable: no answer at all (transport), or the gateway / a proxy said it
// could not reach its store (nothing was changed). Every other answer is
// definite and returned as it is.
func retryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return !errors.Is(err, ErrValidation)
}

// resetter is an answer that must start empty on every attempt of call
// (a claim's: its pending and done fields must not mix).
type resetter interface{ reset() }

// call sends a request with c.retry's retries, decoding a 2xx answer
// into out (an out with a reset method is reset before every attempt).
// It returns the last attempt's status and when it was sent: a lease's
// local expiry counts from then.
func (c *Client) call(ctx context.Context, method, path string, body, out any) (int, time.Time, error) {
	var status int
	var sent time.Time
	err := c.retry(ctx, func() error {
		if r, ok := out.(resetter); ok {
			r.reset()
		}
		sent = time.Now()
		var err error
		status, err = c.do(ctx, method, path, body, out)
		return err
	})
	return status, sent, err
}

// attempt runs op with c.retry's retries, or once when retry is false
// (KeepAlive schedules its own).
func (c *Client) attempt(ctx context.Context, retry bool, op func() error) error {
	if !retry {
		return op()
	}
	return c.retry(ctx, op)
}

func (c *Client) retry(ctx context.Context, op func() error) error {
	p := DefaultRetryPolicy
	if c.retryPolicy != nil {
		p = *c.retryPolicy
	}
	if p.Attempts < 1 {
		p.Attempts = 1
	}
	backoff := p.Base
	var err error
	for attempt := 1; ; attempt++ {
		err = op()
		if err == nil || attempt >= p.Attempts || !retryable(err) || ctx.Err() != nil {
			return err
		}
		d := time.Duration(mrand.Int64N(int64(backoff) + 1))
		var e *Error
		if errors.As(err, &e) && e.RetryAfter > d {
			d = min(e.RetryAfter, max(p.Max, d))
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = time.Duration(math.Min(float64(backoff)*2, float64(p.Max)))
	}
}
