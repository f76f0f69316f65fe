package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leasegate/leasegate"
)

// SetNotAcquiredError is AcquireSet's answer when a member of the set is
// held by another owner (or in its lock delay): the caller holds none of
// the set's new leases. errors.Is(err, ErrNotAcquired) is true.
type SetNotAcquiredError struct {
	// Held are the members that refused the set, each with how long
	// until it frees itself (Redis clock).
	Held []leasegate.HeldMember
}

func (e *SetNotAcquiredError) Error() string {
	return fmt.Sprintf("leasegate: lock set not acquired: %d member(s) held by another owner", len(e.Held))
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *SetNotAcquiredError) Is(target error) bool { return target == ErrNotAcquired }

// AcquireSet takes the locks on every one of resources (1..64 distinct)
// for ttl, all or none (POST /locks, docs/lock-sets.md), with the options
// of Acquire (WithOwner, WithWait, WithLockDelay). It returns one Lease
// per resource, in order, each with its own token, or a
// *SetNotAcquiredError having taken none. Retries are safe as Acquire's
// are: a member the owner already holds counts as acquired.
func (c *Client) AcquireSet(ctx context.Context, resources []string, ttl time.Duration, opts ...AcquireOption) ([]*Lease, error) {
	body, err := lockAcquireBody(ttl, opts)
	if err != nil {
		return nil, err
	}
	body["resources"] = resources
	var out struct {
		Acquired bool       `json:"acquired"`
		Locks    []HeldLock `json:"locks"`
		Held     []struct {
			Resource     string `json:"resource"`
			RetryAfterMS int64  `json:"retry_after_ms"`
		} `json:"held"`
	}
	_, sent, err := c.call(ctx, http.MethodPost, "/locks", body, &out)
	if err != nil {
		return nil, err
	}
	if !out.Acquired {
		e := &SetNotAcquiredError{}
		for _, h := range out.Held {
			e.Held = append(e.Held, leasegate.HeldMember{Resource: h.Resource, RetryAfter: time.Duration(h.RetryAfterMS) * time.Millisecond})
		}
		return nil, e
	}
	leases := make([]*Lease, len(out.Locks))
	for i, l := range out.Locks {
		leases[i] = l.lease(ttl, sent)
	}
	return leases, nil
}

// ReleaseSet ends owner's locks on resources (DELETE /locks): released
// are the members whose lease ended, notHeld the others (no live lease,
// or another owner's). A retry after an attempt without an answer may
// report as not held what that attempt released.
func (c *Client) ReleaseSet(ctx context.Context, owner string, resources []string) (released, notHeld []string, err error) {
	var out struct {
		Released []string `json:"released"`
		NotHeld  []string `json:"not_held"`
	}
	if _, _, err := c.call(ctx, http.MethodDelete, "/locks", map[string]any{"owner": owner, "resources": resources}, &out); err != nil {
		return nil, nil, err
	}
	return out.Released, out.NotHeld, nil
}

// LockSets is the gateway's lock-set routes as a
// leasegate.LockSetService (tenant "": the API key decides it).
func (c *Client) LockSets() leasegate.LockSetService { return lockService{c} }

func (s lockService) AcquireSet(ctx context.Context, tenant string, req leasegate.LockSetRequest) (leasegate.LockSetResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.LockSetResult{}, err
	}
	if req.Owner == "" {
		return leasegate.LockSetResult{}, invalid("owner", "must not be empty")
	}
	opts := []AcquireOption{WithOwner(req.Owner), WithWait(req.Wait)}
	if req.LockDelay > 0 {
		opts = append(opts, WithLockDelay(req.LockDelay))
	}
	leases, err := s.c.AcquireSet(ctx, req.Resources, req.TTL, opts...)
	var e *SetNotAcquiredError
	if errors.As(err, &e) {
		return leasegate.LockSetResult{Held: e.Held, Waited: req.Wait > 0}, nil
	}
	if err != nil {
		return leasegate.LockSetResult{}, domainErr(err)
	}
	res := leasegate.LockSetResult{Acquired: true, Locks: make([]leasegate.Lock, len(leases))}
	for i, l := range leases {
		res.Locks[i] = toLock(l)
	}
	return res, nil
}

func (s lockService) ReleaseSet(ctx context.Context, tenant, owner string, resources []string) (leasegate.LockSetRelease, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.LockSetRelease{}, err
	}
	released, notHeld, err := s.c.ReleaseSet(ctx, owner, resources)
	if err != nil {
		return leasegate.LockSetRelease{}, domainErr(err)
	}
	return leasegate.LockSetRelease{Released: released, NotHeld: notHeld}, nil
}
