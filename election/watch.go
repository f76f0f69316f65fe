package election

import (
	"context"
	"errors"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/redislock"
)

// Observe implements leasegate.ElectionService: GET
// /elections/{name}/events, on the lock engine's watcher machinery.
//
// A watcher is one goroutine per connection. It joins the election's
// waiters (watch.lua), so resignations and proclaims publish, and
// re-reads the leadership (elect_status.lua) when
//   - a resignation or a proclaim of the election is published (a
//     campaign proclaims right after it is elected, so elections
//     publish too);
//   - the leadership's expires_at passes (a timer at expires_at plus
//     ExpiryMargin);
//   - every WatchPoll (renewals publish nothing);
//   - the subscription comes back after an outage.
//
// and reports the difference as events: a new term is elected, a new
// value of the same term proclaimed, and a term that ended before its
// expires_at (by this gateway's clock) resigned, otherwise expired.
func (s *Service) Observe(ctx context.Context, tenant, name string, events chan<- leasegate.ElectionEvent) error {
	k := s.Keys(tenant, name)
	shard := ""
	if s.opts.ShardedReleases {
		shard = s.channel(tenant, name)
	}
	wake, unwatch := s.waiter.WatchKey(k.Lock(), shard)
	defer unwatch()

	interest, leave, err := redislock.WatchInterest(ctx, s.rdb, k.Waiters(), s.opts.OpTimeout, s.opts.InterestTTL)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return scriptreply.Unavailable(err)
	}
	defer leave()

	read := func() (*leasegate.Leader, bool, error) {
		c, cancel := context.WithTimeout(ctx, s.opts.OpTimeout)
		defer cancel()
		ld, proclaimed, err := s.leaderState(c, tenant, name)
		if errors.Is(err, leasegate.ErrNoLeader) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		return &ld, proclaimed, nil
	}
	send := func(kind leasegate.ElectionEventKind, ld *leasegate.Leader) bool {
		select {
		case events <- leasegate.ElectionEvent{Kind: kind, Leader: ld, At: time.Now().UTC()}:
			return true
		case <-ctx.Done():
			return false
		}
	}

	prev, _, err := read()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if !send(leasegate.ElectionState, prev) {
		return nil
	}
	poll := time.NewTicker(s.opts.WatchPoll)
	defer poll.Stop()
	refresh := time.NewTicker(s.opts.InterestTTL / 3)
	defer refresh.Stop()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	// A new term is read between its campaign's two steps (acquire, then
	// proclaim, which publishes) only by chance: its elected event waits
	// for the value, at most ExpiryMargin (then it goes out without).
	var heldTerm int64
	var heldUntil time.Time
	for {
		expiry.Stop()
		switch {
		case heldTerm != 0:
			expiry.Reset(max(time.Until(heldUntil), 0))
		case prev != nil:
			d := time.Until(prev.ExpiresAt) + s.opts.ExpiryMargin
			if d <= 0 {
				// Past expires_at by this clock but live by Redis's:
				// look again soon.
				d = s.opts.ExpiryMargin
			}
			expiry.Reset(d)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.waiter.Done():
			return nil
		case <-refresh.C:
			if err := interest(); err != nil && ctx.Err() == nil {
				return scriptreply.Unavailable(err)
			}
			continue
		case <-wake:
		case <-poll.C:
		case <-expiry.C:
		}
		cur, proclaimed, err := read()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if prev != nil && (cur == nil || cur.Term != prev.Term) {
			kind := leasegate.ElectionResigned
			if !time.Now().Before(prev.ExpiresAt) {
				kind = leasegate.ElectionExpired
			}
			if !send(kind, prev) {
				return nil
			}
			prev = nil
		}
		switch {
		case cur == nil:
			heldTerm = 0
		case prev == nil:
			if !proclaimed && (heldTerm != cur.Term || time.Now().Before(heldUntil)) {
				if heldTerm != cur.Term {
					heldTerm, heldUntil = cur.Term, time.Now().Add(s.opts.ExpiryMargin)
				}
				continue
			}
			heldTerm = 0
			if !send(leasegate.ElectionElected, cur) {
				return nil
			}
		case cur.Value != prev.Value:
			if !send(leasegate.ElectionProclaimed, cur) {
				return nil
			}
		}
		prev = cur
	}
}
