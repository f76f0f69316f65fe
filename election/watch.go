package election

import (
	"context"
	"errors"
	"time"

	"github.com/leasegate/leasegate"
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
	shard := s.opts.ShardChannel(k.Released)
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
	var prev *leasegate.Leader
	// next is when prev's term ends by itself, plus a margin.
	next := func() time.Duration {
		if prev == nil {
			return redislock.NoTimer
		}
		if d := time.Until(prev.ExpiresAt) + s.opts.ExpiryMargin; d > 0 {
			return d
		}
		// Past expires_at by this clock but live by Redis's: look again
		// soon.
		return s.opts.ExpiryMargin
	}
	// A new term is read between its campaign's two steps (acquire, then
	// proclaim, which publishes) only by chance: its elected event waits
	// for the value, at most ExpiryMargin (then it goes out without).
	var heldTerm int64
	var heldUntil time.Time
	spec := redislock.WatchSpec{Key: k.Lock(), Channel: shard, Waiters: k.Waiters(),
		OpTimeout: s.opts.OpTimeout, Poll: s.opts.WatchPoll}
	return s.waiter.Watch(ctx, s.rdb, spec, func(first bool) (time.Duration, bool, error) {
		cur, proclaimed, err := read()
		if err != nil {
			return 0, false, err
		}
		if first {
			prev = cur
			return next(), send(leasegate.ElectionState, cur), nil
		}
		if prev != nil && (cur == nil || cur.Term != prev.Term) {
			kind := leasegate.ElectionResigned
			if !time.Now().Before(prev.ExpiresAt) {
				kind = leasegate.ElectionExpired
			}
			if !send(kind, prev) {
				return 0, false, nil
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
				return max(time.Until(heldUntil), 0), true, nil
			}
			heldTerm = 0
			if !send(leasegate.ElectionElected, cur) {
				return 0, false, nil
			}
		case cur.Value != prev.Value:
			if !send(leasegate.ElectionProclaimed, cur) {
				return 0, false, nil
			}
		}
		prev = cur
		return next(), true, nil
	})
}
