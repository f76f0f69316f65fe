package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/leasegate/leasegate"
)

// Counting semaphores (docs/semaphores.md): up to a limit of holders at
// once on one name, each with its own leased permit.

// Permit is a held slot of a semaphore.
type Permit struct {
	Name  string
	Owner string
	// Token strictly increases for every new permit on the name.
	Token      int64
	AcquiredAt time.Time
	ExpiresAt  time.Time
	// TTL is the lease time asked for; RenewPermit reuses it.
	TTL time.Duration
	// Holders and Limit are the semaphore's after the acquire.
	Holders int
	Limit   int

	localExpiry time.Time // as Lease's
}

// SemaphoreFullError is AcquirePermit's answer when every slot is taken
// (and any wait ended). errors.Is(err, ErrNotAcquired) is true.
type SemaphoreFullError struct {
	Name    string
	Holders int
	Limit   int
	// RetryAfter is how long until the earliest permit expires.
	RetryAfter time.Duration
}

func (e *SemaphoreFullError) Error() string {
	return fmt.Sprintf("leasegate: semaphore %q is full (%d of %d); retry after %v", e.Name, e.Holders, e.Limit, e.RetryAfter)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *SemaphoreFullError) Is(target error) bool { return target == ErrNotAcquired }

// SemaphoreState lists a semaphore's live permits.
type SemaphoreState struct {
	Name    string
	Limit   int
	Holders []Permit
}

type permitJSON struct {
	Name       string    `json:"name"`
	Owner      string    `json:"owner"`
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

func (j permitJSON) permit(ttl time.Duration, sent time.Time) Permit {
	p := Permit{Name: j.Name, Owner: j.Owner, Token: j.Token, AcquiredAt: j.AcquiredAt, ExpiresAt: j.ExpiresAt, TTL: ttl}
	if !sent.IsZero() {
		p.localExpiry = sent.Add(ttl)
	}
	return p
}

func semaphorePath(name string) string { return "/semaphores/" + url.PathEscape(name) }

func checkLimit(limit int) error {
	if limit < 1 || limit > leasegate.MaxSemaphoreLimit {
		return invalid("limit", fmt.Sprintf("%d must be from 1 to %d", limit, leasegate.MaxSemaphoreLimit))
	}
	return nil
}

// AcquirePermit takes a permit of semaphore name (at most limit holders)
// for ttl (whole seconds). It returns the Permit, an error matching
// ErrNotAcquired (a *SemaphoreFullError) when the semaphore is full, or
// leasegate.ErrLimitMismatch when limit differs from the limit in force. Failures
// without an answer are retried: a same-owner acquire keeps its permit.
func (c *Client) AcquirePermit(ctx context.Context, name string, limit int, ttl time.Duration, opts ...AcquireOption) (*Permit, error) {
	o := acquireOpts(opts)
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, err
	}
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	body := o.acquireBody(secs)
	body["limit"] = limit
	var out struct {
		Acquired     bool       `json:"acquired"`
		Permit       permitJSON `json:"permit"`
		Holders      int        `json:"holders"`
		Limit        int        `json:"limit"`
		RetryAfterMS int64      `json:"retry_after_ms"`
	}
	_, sent, err := c.call(ctx, http.MethodPost, semaphorePath(name), body, &out)
	if err != nil {
		return nil, err
	}
	if !out.Acquired {
		return nil, &SemaphoreFullError{Name: name, Holders: out.Holders, Limit: out.Limit, RetryAfter: time.Duration(out.RetryAfterMS) * time.Millisecond}
	}
	p := out.Permit.permit(ttl, sent)
	p.Holders, p.Limit = out.Holders, out.Limit
	return &p, nil
}

// RenewPermit moves the permit's expiry to now + ttl (0: its TTL).
// leasegate.ErrSemaphoreNotHeld (and ErrNotFound): no live permit at all;
// leasegate.ErrSemaphoreForbidden (and ErrForbidden): none is the owner's.
func (c *Client) RenewPermit(ctx context.Context, p *Permit, ttl time.Duration) (*Permit, error) {
	return c.renewPermit(ctx, p, ttl, true)
}

func (c *Client) renewPermit(ctx context.Context, p *Permit, ttl time.Duration, retry bool) (*Permit, error) {
	if ttl == 0 {
		ttl = p.TTL
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, err
	}
	var out struct {
		Permit permitJSON `json:"permit"`
	}
	var sent time.Time
	err = c.attempt(ctx, retry, func() error {
		sent = time.Now()
		_, err := c.do(ctx, http.MethodPost, semaphorePath(p.Name)+"/renew", map[string]any{"owner": p.Owner, "ttl_seconds": secs}, &out)
		return err
	})
	if err != nil {
		return nil, answerFor(err, leasegate.ErrSemaphoreNotHeld, leasegate.ErrSemaphoreForbidden)
	}
	np := out.Permit.permit(ttl, sent)
	np.Holders, np.Limit = p.Holders, p.Limit
	return &np, nil
}

// ReleasePermit gives the permit back (only this token of it). As with
// Release, a retry after an unanswered first attempt that finds nothing
// counts as released.
func (c *Client) ReleasePermit(ctx context.Context, p *Permit) error {
	return answerFor(c.release(ctx, semaphorePath(p.Name), ownerBody(p.Owner, p.Token)),
		leasegate.ErrSemaphoreNotHeld, leasegate.ErrSemaphoreForbidden)
}

// SemaphoreStatus lists the live permits of name, or
// leasegate.ErrSemaphoreNotHeld (and ErrNotFound).
func (c *Client) SemaphoreStatus(ctx context.Context, name string) (SemaphoreState, error) {
	var out struct {
		Name    string       `json:"name"`
		Limit   int          `json:"limit"`
		Holders []permitJSON `json:"holders"`
	}
	if _, _, err := c.call(ctx, http.MethodGet, semaphorePath(name), nil, &out); err != nil {
		return SemaphoreState{}, answerFor(err, leasegate.ErrSemaphoreNotHeld)
	}
	st := SemaphoreState{Name: out.Name, Limit: out.Limit}
	for _, h := range out.Holders {
		st.Holders = append(st.Holders, h.permit(0, time.Time{}))
	}
	return st, nil
}

// Semaphores is the gateway's semaphore routes as a
// leasegate.SemaphoreService (the tenant rule of Locks applies). ttl must
// be whole seconds.
func (c *Client) Semaphores() leasegate.SemaphoreService { return semaphoreService{c} }

type semaphoreService struct{ c *Client }

func toPermit(p Permit) leasegate.Permit {
	return leasegate.Permit{Name: p.Name, Owner: p.Owner, Token: p.Token, AcquiredAt: p.AcquiredAt, ExpiresAt: p.ExpiresAt}
}

func (s semaphoreService) Acquire(ctx context.Context, tenant string, req leasegate.SemaphoreRequest) (leasegate.SemaphoreResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.SemaphoreResult{}, err
	}
	p, err := s.c.AcquirePermit(ctx, req.Name, req.Limit, req.TTL, WithOwner(req.Owner), WithWait(req.Wait))
	var full *SemaphoreFullError
	if errors.As(err, &full) {
		return leasegate.SemaphoreResult{Holders: full.Holders, Limit: full.Limit, RetryAfter: full.RetryAfter, Waited: req.Wait > 0}, nil
	}
	if err != nil {
		return leasegate.SemaphoreResult{}, detailedErr(err, leasegate.ErrLimitMismatch)
	}
	return leasegate.SemaphoreResult{Acquired: true, Permit: toPermit(*p), Holders: p.Holders, Limit: p.Limit}, nil
}

func (s semaphoreService) Status(ctx context.Context, tenant, name string) (leasegate.SemaphoreState, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.SemaphoreState{}, err
	}
	st, err := s.c.SemaphoreStatus(ctx, name)
	if err != nil {
		return leasegate.SemaphoreState{}, domainErr(err)
	}
	out := leasegate.SemaphoreState{Name: st.Name, Limit: st.Limit}
	for _, p := range st.Holders {
		out.Holders = append(out.Holders, toPermit(p))
	}
	return out, nil
}

func (s semaphoreService) Renew(ctx context.Context, tenant, name, owner string, ttl time.Duration) (leasegate.Permit, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Permit{}, err
	}
	p, err := s.c.RenewPermit(ctx, &Permit{Name: name, Owner: owner, TTL: ttl}, ttl)
	if err != nil {
		return leasegate.Permit{}, domainErr(err)
	}
	return toPermit(*p), nil
}

func (s semaphoreService) Release(ctx context.Context, tenant, name, owner string, token int64) (leasegate.ReleaseResult, error) {
	if err := checkTenant(tenant); err != nil {
		return 0, err
	}
	err := s.c.ReleasePermit(ctx, &Permit{Name: name, Owner: owner, Token: token})
	switch {
	case err == nil:
		return leasegate.Released, nil
	case errors.Is(err, ErrNotFound):
		return leasegate.NotFound, nil
	case errors.Is(err, ErrForbidden):
		return leasegate.Forbidden, nil
	}
	return 0, domainErr(err)
}

// KeepPermitAlive renews p in the background as KeepAlive does a lock's
// lease (same options, same loss signal; Lease().Resource is the
// semaphore's name).
func (c *Client) KeepPermitAlive(ctx context.Context, p *Permit, opts ...KeepAliveOption) *KeepAlive {
	return c.keepAlive(ctx, p.lease(), func(ctx context.Context, l *Lease, ttl time.Duration, retry bool) (*Lease, error) {
		np, err := c.renewPermit(ctx, &Permit{Name: l.Resource, Owner: l.Owner, Token: l.Token, TTL: ttl}, ttl, retry)
		if err != nil {
			return nil, err
		}
		return np.lease(), nil
	}, opts...)
}

// lease is p as a Lease, so KeepAlive can keep it.
func (p *Permit) lease() *Lease {
	return &Lease{Resource: p.Name, Owner: p.Owner, Token: p.Token, AcquiredAt: p.AcquiredAt,
		ExpiresAt: p.ExpiresAt, TTL: p.TTL, localExpiry: p.localExpiry}
}
