package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/leasegate/leasegate"
)

// The service interfaces over HTTP: the gateway's routes as the domain's
// leasegate.LockService, leasegate.UserLockService and
// leasegate.FlagRegistry, so code written against the domain runs the
// same in process (redislock, abuse) and against a gateway. The contract
// tests (internal/contracttest) hold both to the same behaviour.
//
// The tenant rule: over HTTP the tenant is the API key's, decided by the
// gateway. Every tenant argument must be ""; any other value is refused
// with a validation error before a request is sent, so a caller that
// means another tenant never acts in the key's by mistake. Use one Client
// per API key for several tenants.
//
// Errors are mapped by code to the domain's: a gateway answer is an
// *Error (errors.Is still matches ErrNotFound, ...) that unwraps to the
// domain error it stands for in the call (leasegate.ErrLockNotHeld,
// leasegate.ErrUserNotFound, leasegate.ErrAllowlisted, *leasegate.BannedError,
// ...). A request that got no answer wraps leasegate.ErrUnavailable and
// the transport error; it may have taken effect (Acquire is safe to
// repeat with the same owner: it returns the same lease).

// Locks is the gateway's lock routes as a leasegate.LockService. ttl must
// be a whole number of seconds (the contract's ttl_seconds). A contended
// Acquire answers RetryAfter but not the holder (the gateway does not
// disclose it): Lock names only the resource. Waited is set only when a
// waiting Acquire was not granted. Acquire, Renew, Release and Status are
// retried as the Client's methods are (docs/client.md).
func (c *Client) Locks() leasegate.LockService { return lockService{c} }

// UserLocks is the gateway's user-lock routes as a
// leasegate.UserLockService. ttl must be a whole number of seconds. The
// gateway answers Acquired, Attempts, Flagged and ExpiresAt; FlaggedNow,
// WindowStart and BannedUntil are not on the wire and stay zero. meta is
// not sent: the gateway records the request's own. A banned user gets a
// *leasegate.BannedError whose Remaining is the answer's Retry-After
// (whole seconds, rounded up) and Until the local time of the answer plus
// Remaining.
func (c *Client) UserLocks() leasegate.UserLockService { return userLockService{c} }

// Flags is the gateway's flagged-user routes (ops role) as a
// leasegate.FlagRegistry. A ban's length must be a whole number of
// seconds. The gateway does not send a ban's Lock or, from Get, its
// Created; BanUser's Ban has Created = Until - d. meta is not sent: the
// gateway names the API key as the operator.
func (c *Client) Flags() leasegate.FlagRegistry { return flagRegistry{c} }

// checkTenant enforces the tenant rule above.
func checkTenant(tenant string) error {
	if tenant != "" {
		return invalid("tenant", "must be empty over HTTP: the API key decides the tenant")
	}
	return nil
}

// domainErr maps err from one call to the domain's errors: an answer whose
// code and field errors are those of one of sentinels (or of
// leasegate.ErrUnavailable) stands for that sentinel; a request without
// an answer wraps leasegate.ErrUnavailable. Anything else is returned as
// it is (an *Error unwraps to a *leasegate.Error with its code).
func domainErr(err error, sentinels ...*leasegate.Error) error {
	var na noAnswerError
	if errors.As(err, &na) {
		return fmt.Errorf("%w: %w", leasegate.ErrUnavailable, err)
	}
	return answerFor(err, append(sentinels, leasegate.ErrUnavailable)...)
}

// answerFor is err, or, when err is an answer whose code and field errors
// are those of one of sentinels, a copy of it that stands for that
// sentinel (errors.Is matches it; it unwraps to it). An answer that
// already stands for a domain error is left as it is.
func answerFor(err error, sentinels ...*leasegate.Error) error {
	var e *Error
	if !errors.As(err, &e) || e.domain != nil {
		return err
	}
	for _, s := range sentinels {
		if e.Code == s.Code && slices.Equal(e.Errors, s.Fields) {
			return e.standingFor(s)
		}
	}
	return err
}

// standingFor is a copy of e that unwraps to domain.
func (e *Error) standingFor(domain error) *Error {
	d := *e
	d.domain = domain
	return &d
}

type lockService struct{ c *Client }

func toLock(l *Lease) leasegate.Lock {
	return leasegate.Lock{Resource: l.Resource, Owner: l.Owner, Token: l.Token, AcquiredAt: l.AcquiredAt, ExpiresAt: l.ExpiresAt}
}

func (s lockService) Acquire(ctx context.Context, tenant string, req leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.AcquireResult{}, err
	}
	if req.Owner == "" {
		// The Client would make one up; the domain's caller names it.
		return leasegate.AcquireResult{}, invalid("owner", "must not be empty")
	}
	opts := []AcquireOption{WithOwner(req.Owner), WithWait(req.Wait)}
	if req.LockDelay > 0 {
		// 0 is the domain's "none asked for": the gateway's default.
		opts = append(opts, WithLockDelay(req.LockDelay))
	}
	lease, err := s.c.Acquire(ctx, req.Resource, req.TTL, opts...)
	var na *NotAcquiredError
	if errors.As(err, &na) {
		return leasegate.AcquireResult{
			Lock:       leasegate.Lock{Resource: req.Resource},
			RetryAfter: na.RetryAfter,
			Waited:     req.Wait > 0,
		}, nil
	}
	if err != nil {
		return leasegate.AcquireResult{}, domainErr(err)
	}
	return leasegate.AcquireResult{Acquired: true, Lock: toLock(lease)}, nil
}

func (s lockService) Status(ctx context.Context, tenant, resource string) (leasegate.Lock, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Lock{}, err
	}
	lease, err := s.c.Status(ctx, resource)
	if err != nil {
		return leasegate.Lock{}, domainErr(err)
	}
	return toLock(lease), nil
}

func (s lockService) Renew(ctx context.Context, tenant, resource, owner string, token int64, ttl time.Duration) (leasegate.Lock, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Lock{}, err
	}
	if ttl == 0 {
		// The Client's Renew reads 0 as "the lease's TTL"; here there is none.
		return leasegate.Lock{}, invalid("ttl", "must be a whole number of seconds, at least 1s")
	}
	lease, err := s.c.Renew(ctx, &Lease{Resource: resource, Owner: owner, Token: token}, ttl)
	if err != nil {
		return leasegate.Lock{}, domainErr(err)
	}
	return toLock(lease), nil
}

func (s lockService) Release(ctx context.Context, tenant, resource, owner string, token int64) (leasegate.ReleaseResult, error) {
	if err := checkTenant(tenant); err != nil {
		return 0, err
	}
	err := domainErr(s.c.Release(ctx, &Lease{Resource: resource, Owner: owner, Token: token}))
	switch {
	case err == nil:
		return leasegate.Released, nil
	case errors.Is(err, leasegate.ErrLockNotHeld):
		return leasegate.NotFound, nil
	case errors.Is(err, leasegate.ErrLockForbidden):
		return leasegate.Forbidden, nil
	}
	return 0, err
}

type userLockService struct{ c *Client }

func (s userLockService) Attempt(ctx context.Context, tenant, name, userID string, ttl time.Duration, _ leasegate.RequestMeta) (leasegate.UserLockResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.UserLockResult{}, err
	}
	if _, err := ttlSeconds(ttl); err != nil {
		return leasegate.UserLockResult{}, err
	}
	res, err := s.c.UserLock(ctx, name, userID, ttl)
	var e *Error
	if errors.As(err, &e) && e.Code == leasegate.CodeAbnormalUsage {
		be := &leasegate.BannedError{
			Until:     time.Now().Add(e.RetryAfter).UTC(),
			Remaining: e.RetryAfter,
		}
		if e.RateLimit != nil {
			be.RateLimit = *e.RateLimit
		}
		return leasegate.UserLockResult{}, e.standingFor(be)
	}
	if err != nil {
		return leasegate.UserLockResult{}, domainErr(err)
	}
	return leasegate.UserLockResult{
		Acquired:  res.Acquired,
		Attempts:  res.Attempts,
		Flagged:   res.Flagged,
		ExpiresAt: res.ExpiresAt,
		RateLimit: res.RateLimit,
	}, nil
}

func (s userLockService) Clear(ctx context.Context, tenant, name, userID string) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return domainErr(s.c.ClearUserLock(ctx, name, userID))
}

type flagRegistry struct{ c *Client }

func toFlag(f Flag) leasegate.Flag {
	out := leasegate.Flag{
		UserID: f.UserID, Lock: f.Lock,
		TimesFlagged: f.TimesFlagged, PeakAttempts: f.PeakAttempts,
		FirstFlaggedAt: f.FirstFlaggedAt, LastFlaggedAt: f.LastFlaggedAt,
		AutomaticBans: f.AutomaticBans, AttemptsAt: f.AttemptsAt,
	}
	if f.BannedUntil != nil {
		out.BannedUntil = *f.BannedUntil
	}
	return out
}

func toBan(b Ban) leasegate.Ban {
	out := leasegate.Ban{Until: b.BannedUntil, Reason: b.Reason, By: b.BannedBy, Source: b.Source, Lock: b.Lock}
	if b.BannedAt != nil {
		out.Created = *b.BannedAt
	}
	return out
}

func (s flagRegistry) List(ctx context.Context, tenant string, q leasegate.FlagQuery) (leasegate.FlagPage, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.FlagPage{}, err
	}
	// As in process: a page larger than the largest is the largest.
	p, err := s.c.ListFlagged(ctx, ListFlaggedOptions{Lock: q.Lock, Limit: min(q.Limit, leasegate.MaxFlagPageSize), Cursor: q.Cursor})
	if err != nil {
		return leasegate.FlagPage{}, domainErr(err, leasegate.ErrBadCursor)
	}
	var out leasegate.FlagPage
	for _, f := range p.Items {
		out.Items = append(out.Items, toFlag(f))
	}
	if p.NextCursor != nil {
		out.NextCursor = *p.NextCursor
	}
	return out, nil
}

func (s flagRegistry) Get(ctx context.Context, tenant, userID string) (leasegate.UserFlags, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.UserFlags{}, err
	}
	uf, err := s.c.GetFlagged(ctx, userID)
	if err != nil {
		return leasegate.UserFlags{}, domainErr(err)
	}
	out := leasegate.UserFlags{UserID: uf.UserID}
	for _, f := range uf.Flags {
		out.Flags = append(out.Flags, toFlag(f))
	}
	if uf.Ban != nil {
		b := toBan(*uf.Ban)
		out.Ban = &b
	}
	return out, nil
}

func (s flagRegistry) ClearFlags(ctx context.Context, tenant, userID string, _ leasegate.RequestMeta) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return domainErr(s.c.ClearFlagged(ctx, userID))
}

func (s flagRegistry) BanUser(ctx context.Context, tenant, userID string, d time.Duration, reason string, _ leasegate.RequestMeta) (leasegate.Ban, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Ban{}, err
	}
	if d < time.Second || d%time.Second != 0 || d > leasegate.MaxBan {
		return leasegate.Ban{}, invalid("seconds", fmt.Sprintf("the ban %v must be whole seconds, from 1s to %v", d, leasegate.MaxBan))
	}
	b, err := s.c.BanUser(ctx, userID, d, reason)
	if err != nil {
		return leasegate.Ban{}, domainErr(err, leasegate.ErrAllowlisted)
	}
	out := toBan(b)
	out.Created = out.Until.Add(-d)
	return out, nil
}

func (s flagRegistry) Unban(ctx context.Context, tenant, userID string, _ leasegate.RequestMeta) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return domainErr(s.c.Unban(ctx, userID))
}
