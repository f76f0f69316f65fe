package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// Claims: work that must happen once (docs/claims.md).

// rawBody is a request body sent as it is, not re-encoded (Client.do):
// a claim's result keeps its bytes.
type rawBody []byte

// Claim is a pending claim held by this caller.
type Claim struct {
	Scope string
	Key   string
	Owner string
	// Token strictly increases for every new holder of (Scope, Key).
	Token     int64
	ClaimedAt time.Time
	ExpiresAt time.Time
	// TTL is the lease time asked for.
	TTL time.Duration

	localExpiry time.Time
}

// ClaimState is a claim as the gateway answered it: pending (Claim is
// set) or done (Result, CompletedAt and Token are set).
type ClaimState struct {
	State leasegate.ClaimState
	// Created: this call started the pending claim; do the work now.
	Created bool
	Claim   *Claim
	// Result is the stored result, byte for byte.
	Result      json.RawMessage
	CompletedAt time.Time
	Token       int64
}

type claimAnswer struct {
	State string `json:"state"`
	Claim *struct {
		Scope     string    `json:"scope"`
		Key       string    `json:"key"`
		Owner     string    `json:"owner"`
		Token     int64     `json:"token"`
		ClaimedAt time.Time `json:"claimed_at"`
		ExpiresAt time.Time `json:"expires_at"`
	} `json:"claim"`
	Result      json.RawMessage `json:"result"`
	CompletedAt time.Time       `json:"completed_at"`
	Token       int64           `json:"token"`
}

func (a *claimAnswer) reset() { *a = claimAnswer{} }

func (a claimAnswer) state(ttl time.Duration, sent time.Time, created bool) (ClaimState, error) {
	switch {
	case a.State == "done":
		return ClaimState{State: leasegate.ClaimDone, Result: a.Result, CompletedAt: a.CompletedAt, Token: a.Token}, nil
	case a.State == "pending" && a.Claim != nil:
		cl := a.Claim
		c := &Claim{Scope: cl.Scope, Key: cl.Key, Owner: cl.Owner, Token: cl.Token,
			ClaimedAt: cl.ClaimedAt, ExpiresAt: cl.ExpiresAt, TTL: ttl}
		if !sent.IsZero() {
			c.localExpiry = sent.Add(ttl)
		}
		return ClaimState{State: leasegate.ClaimPending, Created: created, Claim: c, Token: cl.Token}, nil
	}
	return ClaimState{}, fmt.Errorf("leasegate: unexpected claim answer state %q", a.State)
}

func claimPath(scope, key string) string {
	return "/claims/" + url.PathEscape(scope) + "/" + url.PathEscape(key)
}

// Claim claims (scope, key) for ttl (whole seconds). A pending answer
// with Created means the caller does the work now; the same owner again
// gets the same claim with its expiry moved; a done answer carries the
// stored result: the work already happened. Another owner's live claim
// is an error matching leasegate.ErrClaimInProgress (its RetryAfter says how long
// the lease has left). Failures without an answer are retried (the owner
// is the same, so a retry returns the same claim).
func (c *Client) Claim(ctx context.Context, scope, key string, ttl time.Duration, opts ...AcquireOption) (ClaimState, error) {
	o := acquireOpts(opts)
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return ClaimState{}, err
	}
	var out claimAnswer
	status, sent, err := c.call(ctx, http.MethodPost, claimPath(scope, key), map[string]any{"owner": o.owner, "ttl_seconds": secs}, &out)
	if err != nil {
		return ClaimState{}, err
	}
	return out.state(ttl, sent, status == http.StatusCreated)
}

// CompleteClaim stores result (one JSON value, at most 8 KiB, kept byte
// for byte) for keep (whole seconds; 0: the gateway's default, 7 days).
// Only the pending holder under cl.Token may complete:
// leasegate.ErrClaimForbidden (and ErrForbidden) otherwise,
// leasegate.ErrClaimNotFound (and ErrNotFound) when nothing is pending. Completing again with
// the same token and result answers the same done state, so failures
// without an answer are retried.
func (c *Client) CompleteClaim(ctx context.Context, cl *Claim, result json.RawMessage, keep time.Duration) (ClaimState, error) {
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	if !json.Valid(result) {
		return ClaimState{}, invalid("result", "must be one JSON value")
	}
	if len(result) > leasegate.MaxClaimResult {
		return ClaimState{}, invalid("result", fmt.Sprintf("must be at most %d bytes", leasegate.MaxClaimResult))
	}
	owner, err := json.Marshal(cl.Owner)
	if err != nil {
		return ClaimState{}, fmt.Errorf("leasegate: encode owner: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`{"owner":`)
	b.Write(owner)
	b.WriteString(`,"token":`)
	b.WriteString(strconv.FormatInt(cl.Token, 10))
	b.WriteString(`,"result":`)
	b.Write(result)
	if keep != 0 {
		secs, err := ttlSeconds(keep)
		if err != nil {
			return ClaimState{}, invalid("keep", err.Error())
		}
		b.WriteString(`,"keep_seconds":`)
		b.WriteString(strconv.FormatInt(secs, 10))
	}
	b.WriteString(`}`)
	var out claimAnswer
	if _, _, err := c.call(ctx, http.MethodPost, claimPath(cl.Scope, cl.Key)+"/complete", rawBody(b.Bytes()), &out); err != nil {
		return ClaimState{}, answerFor(err, leasegate.ErrClaimNotFound, leasegate.ErrClaimForbidden)
	}
	return out.state(0, time.Time{}, false)
}

// AbandonClaim ends the caller's pending claim so another caller may
// claim at once. As with Release, a retry after an unanswered first
// attempt that finds nothing pending counts as done.
func (c *Client) AbandonClaim(ctx context.Context, cl *Claim) error {
	return answerFor(c.release(ctx, claimPath(cl.Scope, cl.Key), map[string]any{"owner": cl.Owner, "token": cl.Token}),
		leasegate.ErrClaimNotFound, leasegate.ErrClaimForbidden)
}

// GetClaim reads the pending or done state of (scope, key), or
// leasegate.ErrClaimNotFound (and ErrNotFound).
func (c *Client) GetClaim(ctx context.Context, scope, key string) (ClaimState, error) {
	var out claimAnswer
	if _, _, err := c.call(ctx, http.MethodGet, claimPath(scope, key), nil, &out); err != nil {
		return ClaimState{}, answerFor(err, leasegate.ErrClaimNotFound)
	}
	return out.state(0, time.Time{}, false)
}

// RemoveClaim deletes (scope, key) whatever its state: an operator action
// (ops key), recorded with reason in the gateway's audit log.
func (c *Client) RemoveClaim(ctx context.Context, scope, key, reason string) error {
	q := url.Values{"force": {"true"}, "reason": {reason}}
	_, _, err := c.call(ctx, http.MethodDelete, claimPath(scope, key)+"?"+q.Encode(), nil, nil)
	return err
}

// lease is cl as a Lease, so KeepAlive can keep it.
func (cl *Claim) lease() *Lease {
	return &Lease{Resource: cl.Scope + "/" + cl.Key, Owner: cl.Owner, Token: cl.Token,
		AcquiredAt: cl.ClaimedAt, ExpiresAt: cl.ExpiresAt, TTL: cl.TTL, localExpiry: cl.localExpiry}
}

// claimRenewer renews a claim by claiming it again as its owner (the
// contract's same-owner claim moves expires_at). An answer under another
// token, or a done one, means the lease had lapsed: that is a loss, never
// a renewal.
func (c *Client) claimRenewer(cl *Claim) renewFunc {
	return func(ctx context.Context, lease *Lease, ttl time.Duration, _ bool) (*Lease, error) {
		secs, err := ttlSeconds(ttl)
		if err != nil {
			return nil, err
		}
		var out claimAnswer
		sent := time.Now()
		if _, err := c.do(ctx, http.MethodPost, claimPath(cl.Scope, cl.Key), map[string]any{"owner": lease.Owner, "ttl_seconds": secs}, &out); err != nil {
			return nil, err
		}
		st, err := out.state(ttl, sent, false)
		if err != nil {
			return nil, err
		}
		if st.State != leasegate.ClaimPending || st.Claim.Token != lease.Token {
			return nil, &Error{Type: api.Type(leasegate.CodeForbidden), Status: http.StatusForbidden, Code: leasegate.CodeForbidden,
				Detail: "the claim's lease lapsed: it is done, or held under another token"}
		}
		return st.Claim.lease(), nil
	}
}

// OnceOption configures Once.
type OnceOption func(*onceOptions)

type onceOptions struct {
	owner   string
	ttl     time.Duration
	keep    time.Duration
	backoff time.Duration
	maxWait time.Duration
}

// WithOnceOwner names the claimant (default: a fresh DefaultOwner).
func WithOnceOwner(owner string) OnceOption { return func(o *onceOptions) { o.owner = owner } }

// WithClaimTTL is the claim's lease time (whole seconds, default 30 s);
// KeepAlive renews it while fn runs.
func WithClaimTTL(ttl time.Duration) OnceOption { return func(o *onceOptions) { o.ttl = ttl } }

// WithKeep is how long the result is kept (whole seconds; default the
// gateway's, 7 days).
func WithKeep(keep time.Duration) OnceOption { return func(o *onceOptions) { o.keep = keep } }

// WithClaimBackoff bounds how Once polls while another caller runs fn:
// from first, doubling up to max (defaults 50 ms and 2 s), never longer
// than the other caller's lease has left.
func WithClaimBackoff(first, max time.Duration) OnceOption {
	return func(o *onceOptions) { o.backoff, o.maxWait = first, max }
}

// ErrResultLost: fn ran, but its result could not be stored because the
// claim's lease was lost meanwhile (another caller may run fn too).
var ErrResultLost = errors.New("leasegate: claim lost before its result was stored")

// Once runs fn at most once per (scope, key) across every caller of the
// gateway and returns its result; every later caller gets the stored
// result, byte for byte, without running fn. It claims (scope, key),
// keeps the claim's lease alive while fn runs (fn's ctx ends if the lease
// is lost), then completes the claim with fn's result, or abandons it
// when fn fails so another caller may try (the error is returned). While
// another caller holds the claim, Once waits with backoff, bounded by
// ctx. fn's result must be one JSON value of at most 8 KiB (nil: null).
func (c *Client) Once(ctx context.Context, scope, key string, fn func(ctx context.Context) (json.RawMessage, error), opts ...OnceOption) (json.RawMessage, error) {
	o := onceOptions{ttl: 30 * time.Second, backoff: 50 * time.Millisecond, maxWait: 2 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	if o.owner == "" {
		o.owner = DefaultOwner()
	}
	backoff := o.backoff
	for {
		st, err := c.Claim(ctx, scope, key, o.ttl, WithOwner(o.owner))
		var e *Error
		switch {
		case errors.As(err, &e) && e.Code == leasegate.CodeClaimInProgress:
			d := min(backoff, o.maxWait)
			if e.RetryAfter > 0 {
				d = min(d, e.RetryAfter)
			}
			backoff = min(backoff*2, o.maxWait)
			t := time.NewTimer(d/2 + time.Duration(mrand.Int64N(int64(d/2)+1)))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("leasegate: waiting for claim %s/%s: %w", scope, key, ctx.Err())
			case <-t.C:
			}
			continue
		case err != nil:
			return nil, err
		case st.State == leasegate.ClaimDone:
			return st.Result, nil
		}
		return c.runClaim(ctx, st.Claim, fn, o)
	}
}

// runClaim runs fn under cl, kept alive, and completes or abandons it.
func (c *Client) runClaim(ctx context.Context, cl *Claim, fn func(ctx context.Context) (json.RawMessage, error), o onceOptions) (json.RawMessage, error) {
	ka := c.keepAlive(ctx, cl.lease(), c.claimRenewer(cl))
	result, ferr := fn(ka.Context())
	ka.Stop()
	lost := ka.Err()
	if ferr == nil && len(result) == 0 {
		result = json.RawMessage("null")
	}
	if ferr == nil && (!json.Valid(result) || len(result) > leasegate.MaxClaimResult) {
		ferr = invalid("result", fmt.Sprintf("fn must return one JSON value of at most %d bytes", leasegate.MaxClaimResult))
	}
	// Abandon and complete are answered even when ctx has just ended: the
	// claim should not stay pending until its lease expires.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ferr != nil {
		if err := c.AbandonClaim(actx, cl); err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrForbidden) {
			return nil, errors.Join(ferr, fmt.Errorf("leasegate: abandoning claim %s/%s: %w", cl.Scope, cl.Key, err))
		}
		return nil, ferr
	}
	done, err := c.CompleteClaim(actx, cl, result, o.keep)
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrForbidden) {
			return nil, fmt.Errorf("%w (%s/%s): %w", ErrResultLost, cl.Scope, cl.Key, errors.Join(err, ignoreCanceled(lost)))
		}
		return nil, err
	}
	return done.Result, nil
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Claims is the gateway's claim routes as a leasegate.ClaimService (the
// tenant rule of Locks applies). ttl and keep must be whole seconds.
// Reclaimed is not on the wire and stays false; Remove needs an ops key
// and answers the state as ClaimDone (the gateway does not say which).
func (c *Client) Claims() leasegate.ClaimService { return claimService{c} }

type claimService struct{ c *Client }

func toClaimResult(st ClaimState) leasegate.ClaimResult {
	r := leasegate.ClaimResult{State: st.State, Created: st.Created, Result: st.Result, CompletedAt: st.CompletedAt, Token: st.Token}
	if st.Claim != nil {
		cl := st.Claim
		r.Claim = leasegate.Claim{Scope: cl.Scope, Key: cl.Key, Owner: cl.Owner, Token: cl.Token, ClaimedAt: cl.ClaimedAt, ExpiresAt: cl.ExpiresAt}
	}
	return r
}

func (s claimService) Claim(ctx context.Context, tenant string, req leasegate.ClaimRequest) (leasegate.ClaimResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.ClaimResult{}, err
	}
	st, err := s.c.Claim(ctx, req.Scope, req.Key, req.TTL, WithOwner(req.Owner))
	if err != nil {
		return leasegate.ClaimResult{}, detailedErr(err, leasegate.ErrClaimInProgress)
	}
	return toClaimResult(st), nil
}

func (s claimService) Complete(ctx context.Context, tenant string, req leasegate.CompleteRequest) (leasegate.ClaimResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.ClaimResult{}, err
	}
	st, err := s.c.CompleteClaim(ctx, &Claim{Scope: req.Scope, Key: req.Key, Owner: req.Owner, Token: req.Token}, req.Result, req.Keep)
	if err != nil {
		return leasegate.ClaimResult{}, domainErr(err)
	}
	return toClaimResult(st), nil
}

func (s claimService) Abandon(ctx context.Context, tenant, scope, key, owner string, token int64) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return domainErr(s.c.AbandonClaim(ctx, &Claim{Scope: scope, Key: key, Owner: owner, Token: token}))
}

func (s claimService) Get(ctx context.Context, tenant, scope, key string) (leasegate.ClaimResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.ClaimResult{}, err
	}
	st, err := s.c.GetClaim(ctx, scope, key)
	if err != nil {
		return leasegate.ClaimResult{}, domainErr(err)
	}
	return toClaimResult(st), nil
}

func (s claimService) Remove(ctx context.Context, tenant, scope, key, reason string, _ leasegate.RequestMeta) (leasegate.ClaimState, error) {
	if err := checkTenant(tenant); err != nil {
		return 0, err
	}
	if err := s.c.RemoveClaim(ctx, scope, key, reason); err != nil {
		return 0, domainErr(err, leasegate.ErrClaimNotFound)
	}
	return leasegate.ClaimDone, nil
}

// detailedErr maps an answer with sentinel's code to a domain error that
// matches sentinel and carries the answer's detail and Retry-After (the
// limit in force, the time a claim's lease has left).
func detailedErr(err error, sentinel *leasegate.Error) error {
	var e *Error
	if errors.As(err, &e) && e.Code == sentinel.Code {
		return e.standingFor(leasegate.Detailed(sentinel, e.Detail, e.RetryAfter))
	}
	return domainErr(err)
}
