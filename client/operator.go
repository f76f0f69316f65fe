package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/leasegate/leasegate"
)

// Seeing and acting on locks (ops role; docs/operations.md).

// HeldLock is a live lease as the listing shows it: the contract's LOCK
// plus Waiters. The client reads every LOCK of an answer into it (an
// acquire's, a renewal's, a status, a forced release's, a watched
// event's), with Waiters 0 where the answer has none.
type HeldLock struct {
	Resource   string    `json:"resource"`
	Owner      string    `json:"owner"`
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
	// Waiters is how many acquires wait on it (best effort).
	Waiters int `json:"waiters"`
}

// LockPage is one page of List.
type LockPage struct {
	Items []HeldLock `json:"items"`
	// NextCursor is "" after the last page.
	NextCursor string `json:"-"`
}

// ListOptions select a page of List.
type ListOptions struct {
	Prefix string
	Limit  int // 1..1000; 0: the gateway's default (100)
	Cursor string
}

// getPage GETs the page of a listing at path and returns its items and
// next_cursor ("" after the last page).
func getPage[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, string, error) {
	var out struct {
		Items      []T     `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}
	_, err := c.do(ctx, http.MethodGet, withQuery(path, q), nil, &out)
	next := ""
	if out.NextCursor != nil {
		next = *out.NextCursor
	}
	return out.Items, next, err
}

// List returns a page of the live leases of the key's tenant whose
// resource starts with opts.Prefix, in resource order (ops role).
func (c *Client) List(ctx context.Context, opts ListOptions) (LockPage, error) {
	q := pageQuery(opts.Limit, opts.Cursor)
	if opts.Prefix != "" {
		q.Set("prefix", opts.Prefix)
	}
	items, next, err := getPage[HeldLock](ctx, c, "/locks", q)
	return LockPage{Items: items, NextCursor: next}, err
}

// ForceRelease ends whoever's lease on resource (ops role), with reason
// (1..500 bytes) for the audit trail, and returns the lease that ended.
// ErrNotFound when nothing is held.
func (c *Client) ForceRelease(ctx context.Context, resource, reason string) (HeldLock, error) {
	var out struct {
		Released HeldLock `json:"released"`
	}
	_, err := c.do(ctx, http.MethodDelete, lockPath(resource)+"?force=true", map[string]string{"reason": reason}, &out)
	return out.Released, err
}

// AuditRecord is one operator action: Reason is the operator's text as
// given, Details the other facts (a forced release's owner and token, a
// ban's seconds and until; integers as int64).
type AuditRecord struct {
	At        time.Time              `json:"at"`
	Actor     string                 `json:"actor"`
	Action    string                 `json:"action"`
	Target    string                 `json:"target"`
	Reason    string                 `json:"reason"`
	Details   leasegate.AuditDetails `json:"details"`
	RequestID string                 `json:"request_id"`
}

// AuditPage is one page of Audit, newest first.
type AuditPage struct {
	Items      []AuditRecord `json:"items"`
	NextCursor string        `json:"-"`
}

// Audit returns a page of the audit trail (ops role); cursor "" is the
// newest.
func (c *Client) Audit(ctx context.Context, limit int, cursor string) (AuditPage, error) {
	items, next, err := getPage[AuditRecord](ctx, c, "/audit", pageQuery(limit, cursor))
	return AuditPage{Items: items, NextCursor: next}, err
}

// pageQuery is the query of a paged listing: the page size (0: the
// gateway's default) and the cursor ("": the first page), each left out
// when not set.
func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// Event is one change of a lock (Watch): Kind is state, acquired,
// renewed, released, expired or force-released; Lock is nil only for a
// state event of a free resource.
type Event struct {
	Kind string
	Lock *HeldLock
	At   time.Time
}

// Watch streams the changes of resource to fn (any role) until ctx ends
// (nil), fn returns an error (that error) or the stream fails or ends
// (an error; leasegate.ErrShuttingDown when the gateway, shutting down,
// asked the client to reconnect). The first event is the state. It uses
// the Client's transport without its timeout.
func (c *Client) Watch(ctx context.Context, resource string, fn func(Event) error) error {
	return c.events(ctx, lockPath(resource)+"/events", "watch "+resource, resource, func(kind, data string) error {
		ev := Event{Kind: kind}
		if data != "null" {
			var v struct {
				HeldLock
				At time.Time `json:"at"`
			}
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				return fmt.Errorf("leasegate: watch %s: event %s: %w", resource, kind, err)
			}
			ev.Lock, ev.At = &v.HeldLock, v.At
		}
		return fn(ev)
	})
}

// Operator is the gateway's operator routes as the domain's
// leasegate.LockOperator (tenant "" only, as for Locks). reason is sent
// with a forced release; meta is not (the gateway records the request's
// own). Watch converts the stream's events and never closes events.
func (c *Client) Operator() leasegate.LockOperator { return lockOperator{c} }

type lockOperator struct{ c *Client }

func (h HeldLock) domain() leasegate.HeldLock {
	return leasegate.HeldLock{Lock: leasegate.Lock{Resource: h.Resource, Owner: h.Owner, Token: h.Token,
		AcquiredAt: h.AcquiredAt.UTC(), ExpiresAt: h.ExpiresAt.UTC()}, Waiters: h.Waiters}
}

func (o lockOperator) List(ctx context.Context, tenant, prefix, cursor string, limit int) (leasegate.LockPage, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.LockPage{}, err
	}
	p, err := o.c.List(ctx, ListOptions{Prefix: prefix, Limit: limit, Cursor: cursor})
	if err != nil {
		return leasegate.LockPage{}, domainErr(err)
	}
	out := leasegate.LockPage{Items: make([]leasegate.HeldLock, 0, len(p.Items)), NextCursor: p.NextCursor}
	for _, h := range p.Items {
		out.Items = append(out.Items, h.domain())
	}
	return out, nil
}

func (o lockOperator) ForceRelease(ctx context.Context, tenant, resource, reason string, _ leasegate.RequestMeta) (leasegate.Lock, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Lock{}, err
	}
	h, err := o.c.ForceRelease(ctx, resource, reason)
	if err != nil {
		return leasegate.Lock{}, domainErr(err, leasegate.ErrLockNotHeld)
	}
	return h.domain().Lock, nil
}

func (o lockOperator) Watch(ctx context.Context, tenant, resource string, events chan<- leasegate.LockEvent) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	err := o.c.Watch(ctx, resource, func(e Event) error {
		ev := leasegate.LockEvent{Kind: leasegate.LockEventKind(e.Kind), At: e.At}
		if e.Lock != nil {
			lk := e.Lock.domain().Lock
			ev.Lock = &lk
		}
		return sendOrDone(ctx, events, ev)
	})
	if ctx.Err() != nil {
		return nil
	}
	return domainErr(err)
}

// sendOrDone sends v on ch, or gives up with ctx's error when ctx ends
// first (the operator and election services' event channels).
func sendOrDone[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
