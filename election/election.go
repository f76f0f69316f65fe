// Package election is leasegate's leader election (docs/elections.md),
// built on the lock engine: an election is a lease of redislock on its
// own key (keyspace.Space.Elections), its owner the leader (candidate)
// and its token the term. Campaigns are the engine's acquires (the same
// script, FIFO waiting on the same Waiter, lock delay), a resignation is
// its token-checked release, and the listing its Operator over the
// elections' index. What elections add is the leader's value, stored in
// the lease's hash and changed only with a candidate-and-term check
// (proclaim.lua), and their events.
package election

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/scripts"
)

// ErrBadReply: a script answered in a shape it never documents.
var ErrBadReply = errors.New("election: unexpected script reply")

var reply = scriptreply.Decoder{Bad: ErrBadReply}

// Options configure a Service: the engines' Config (elections live under
// its Prefix's Elections() space; OnRelease is not called for them) and
// the watchers' timing. Zero values take the lock engine's defaults.
type Options struct {
	redislock.Config
	// WatchPoll is how often a watcher re-reads the leadership (renewals
	// publish nothing; default redislock.DefaultWatchPoll). ExpiryMargin
	// is added to expires_at before a watcher re-checks (default
	// redislock.DefaultWatchMargin).
	WatchPoll    time.Duration
	ExpiryMargin time.Duration
}

// Service is leasegate.ElectionService on Redis. It is safe for
// concurrent use.
type Service struct {
	rdb    redis.Scripter
	cmd    redis.Cmdable
	locks  *redislock.Service
	ops    *redislock.Operator
	waiter *redislock.Waiter
	keys   keyspace.Space
	opts   Options
}

var _ leasegate.ElectionService = (*Service)(nil)

// New returns a Service whose scripts run on scripter (the gateway's
// Batcher, or rdb) and whose listing reads rdb; campaigns wait, and
// watchers wake, on w (nil: a Waiter without a subscription, which
// polls).
func New(rdb redis.Cmdable, scripter redis.Scripter, w *redislock.Waiter, opts Options) *Service {
	if scripter == nil {
		scripter = rdb
	}
	if w == nil {
		w = redislock.NewWaiter(nil, redislock.WaiterOptions{})
	}
	opts.Config = opts.Config.Defaults()
	if opts.WatchPoll <= 0 {
		opts.WatchPoll = redislock.DefaultWatchPoll
	}
	if opts.ExpiryMargin <= 0 {
		opts.ExpiryMargin = redislock.DefaultWatchMargin
	}
	keys := keyspace.Space{Prefix: opts.Prefix}.Elections()
	cfg := opts.Config
	cfg.Prefix, cfg.OnRelease = keys.Prefix, nil
	locker := redislock.New(scripter, cfg)
	return &Service{
		rdb:    scripter,
		cmd:    rdb,
		locks:  redislock.NewService(locker, w),
		ops:    redislock.NewOperator(rdb, locker, w, redislock.OperatorOptions{}),
		waiter: w,
		keys:   keys,
		opts:   opts,
	}
}

// Keys returns the keys of election name in tenant.
func (s *Service) Keys(tenant, name string) keyspace.Resource {
	return s.keys.Resource(tenant, name)
}

// channel is where a change of election name is published, "" for none.
func (s *Service) channel(tenant, name string) string {
	return s.opts.Channel(s.Keys(tenant, name).Released)
}

// Campaign implements leasegate.ElectionService: one acquire of the lock
// engine (waiting, when asked, in the engine's FIFO queue), then, when it
// leads, one proclaim of its value. Two Redis calls when elected, two
// when refused (the refusal reads the sitting leader's value).
func (s *Service) Campaign(ctx context.Context, tenant string, req leasegate.CampaignRequest) (leasegate.CampaignResult, error) {
	if len(req.Value) > leasegate.MaxLeaderValue {
		return leasegate.CampaignResult{}, fmt.Errorf("election: value of %d bytes is longer than %d", len(req.Value), leasegate.MaxLeaderValue)
	}
	res, err := s.locks.Acquire(ctx, tenant, leasegate.AcquireRequest{
		Resource: req.Name, Owner: req.Candidate, TTL: req.TTL, Wait: req.Wait, LockDelay: req.LockDelay,
	})
	if err != nil {
		return leasegate.CampaignResult{Waited: res.Waited}, err
	}
	if !res.Acquired {
		return s.refused(ctx, tenant, req.Name, res)
	}
	// A new grant starts now and ends TTL later; a renewal keeps its
	// earlier acquired_at.
	renewed := res.Lock.ExpiresAt.Sub(res.Lock.AcquiredAt) > req.TTL.Truncate(time.Millisecond)
	pctx, cancel := context.WithTimeout(ctx, s.opts.OpTimeout)
	ld, err := s.proclaim(pctx, tenant, req.Name, req.Candidate, res.Lock.Token, req.Value)
	cancel()
	switch {
	case errors.Is(err, leasegate.ErrNotLeader):
		// The leadership ended between the two calls (a TTL that short):
		// the candidate does not lead.
		return s.refused(ctx, tenant, req.Name, leasegate.AcquireResult{Waited: res.Waited})
	case err != nil:
		if !renewed {
			// Never an election on a store error: undo the grant
			// (best effort; the lease expires otherwise).
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.OpTimeout)
			_, _ = s.locks.Release(uctx, tenant, req.Name, req.Candidate, res.Lock.Token)
			cancel()
		}
		return leasegate.CampaignResult{Waited: res.Waited}, err
	}
	return leasegate.CampaignResult{Elected: true, Leadership: ld, Renewed: renewed, Waited: res.Waited}, nil
}

// refused answers a campaign that does not lead: the sitting leader, if
// any, with its value.
func (s *Service) refused(ctx context.Context, tenant, name string, res leasegate.AcquireResult) (leasegate.CampaignResult, error) {
	out := leasegate.CampaignResult{RetryAfter: max(res.RetryAfter, 0), Waited: res.Waited, Delayed: res.Delayed}
	lctx, cancel := context.WithTimeout(ctx, s.opts.OpTimeout)
	defer cancel()
	cur, err := s.leader(lctx, tenant, name)
	switch {
	case err == nil:
		out.Current = &cur
		if out.RetryAfter == 0 {
			out.RetryAfter = max(time.Until(cur.ExpiresAt), 0)
		}
	case !errors.Is(err, leasegate.ErrNoLeader):
		return leasegate.CampaignResult{Waited: res.Waited}, err
	}
	return out, nil
}

// Proclaim implements leasegate.ElectionService.
func (s *Service) Proclaim(ctx context.Context, tenant, name, candidate string, term int64, value string) (leasegate.Leader, error) {
	if len(value) > leasegate.MaxLeaderValue {
		return leasegate.Leader{}, fmt.Errorf("election: value of %d bytes is longer than %d", len(value), leasegate.MaxLeaderValue)
	}
	if term <= 0 {
		return leasegate.Leader{}, leasegate.ErrNotLeader
	}
	return s.proclaim(ctx, tenant, name, candidate, term, value)
}

func (s *Service) proclaim(ctx context.Context, tenant, name, candidate string, term int64, value string) (leasegate.Leader, error) {
	k := s.Keys(tenant, name)
	v, arr, flag, err := reply.RunFlagged(ctx, s.rdb, scripts.Proclaim, "proclaim",
		[]string{k.Lock(), k.Waiters()}, candidate, strconv.FormatInt(term, 10), value, s.channel(tenant, name))
	if err != nil {
		return leasegate.Leader{}, err
	}
	switch {
	case (flag == 0 || flag == -1) && len(arr) == 1:
		return leasegate.Leader{}, leasegate.ErrNotLeader
	case flag == 1 && len(arr) == 6:
		return decodeLeader(name, arr[1:])
	}
	return leasegate.Leader{}, reply.Reply("proclaim", v)
}

// Resign implements leasegate.ElectionService: the lock engine's
// token-checked release (it publishes, so the next queued campaign and
// the watchers wake at once).
func (s *Service) Resign(ctx context.Context, tenant, name, candidate string, term int64) error {
	if term <= 0 {
		return leasegate.ErrNotLeader
	}
	res, err := s.locks.Release(ctx, tenant, name, candidate, term)
	if err != nil {
		return err
	}
	switch res {
	case leasegate.Released:
		return nil
	case leasegate.NotFound, leasegate.Forbidden:
		return leasegate.ErrNotLeader
	}
	return fmt.Errorf("election: unknown release result %v", res)
}

// Leader implements leasegate.ElectionService.
func (s *Service) Leader(ctx context.Context, tenant, name string) (leasegate.Leader, error) {
	return s.leader(ctx, tenant, name)
}

func (s *Service) leader(ctx context.Context, tenant, name string) (leasegate.Leader, error) {
	ld, _, err := s.leaderState(ctx, tenant, name)
	return ld, err
}

// leaderState is leader, and whether the term's value has been
// proclaimed yet (its campaign proclaims right after its acquire).
func (s *Service) leaderState(ctx context.Context, tenant, name string) (leasegate.Leader, bool, error) {
	v, arr, flag, err := reply.RunFlagged(ctx, s.rdb, scripts.ElectStatus, "elect_status",
		[]string{s.Keys(tenant, name).Lock()})
	if err != nil {
		return leasegate.Leader{}, false, err
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.Leader{}, false, leasegate.ErrNoLeader
	case flag == 1 && len(arr) == 7:
		p, ok := arr[6].(int64)
		if !ok || (p != 0 && p != 1) {
			break
		}
		ld, err := decodeLeader(name, arr[1:6])
		return ld, p == 1, err
	}
	return leasegate.Leader{}, false, reply.Reply("elect_status", v)
}

// decodeLeader reads {token, acquired_at_ms, expires_at_ms, owner, value}.
func decodeLeader(name string, f []any) (leasegate.Leader, error) {
	tok, acq, exp, err := reply.Lease(f[:3])
	if err != nil {
		return leasegate.Leader{}, err
	}
	owner, ok1 := f[3].(string)
	value, ok2 := f[4].(string)
	if !ok1 || !ok2 {
		return leasegate.Leader{}, reply.Reply("leader", f)
	}
	return leasegate.Leader{Name: name, Candidate: owner, Value: value, Term: tok, ElectedAt: acq, ExpiresAt: exp}, nil
}

// List implements leasegate.ElectionService: the lock engine's listing
// over the elections' index, then one pipeline for the values.
func (s *Service) List(ctx context.Context, tenant, prefix, cursor string, limit int) (leasegate.ElectionPage, error) {
	page, err := s.ops.List(ctx, tenant, prefix, cursor, limit)
	if err != nil {
		return leasegate.ElectionPage{}, err
	}
	out := leasegate.ElectionPage{Items: make([]leasegate.HeldElection, 0, len(page.Items)), NextCursor: page.NextCursor}
	if len(page.Items) == 0 {
		return out, nil
	}
	values, err := s.values(ctx, tenant, page.Items)
	if err != nil {
		return leasegate.ElectionPage{}, err
	}
	for i, h := range page.Items {
		out.Items = append(out.Items, leasegate.HeldElection{Waiters: h.Waiters, Leader: leasegate.Leader{
			Name: h.Resource, Candidate: h.Owner, Value: values[i], Term: h.Token,
			ElectedAt: h.AcquiredAt, ExpiresAt: h.ExpiresAt,
		}})
	}
	return out, nil
}

// values reads the value proclaimed for each listed term ("" when none,
// or when the term has changed since the listing read it).
func (s *Service) values(ctx context.Context, tenant string, items []leasegate.HeldLock) ([]string, error) {
	cmds := make([]*redis.SliceCmd, len(items))
	_, err := s.cmd.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, h := range items {
			cmds[i] = p.HMGet(ctx, s.Keys(tenant, h.Resource).Lock(), "value", "value_term")
		}
		return nil
	})
	if err != nil {
		return nil, scriptreply.Unavailable(err)
	}
	out := make([]string, len(items))
	for i, h := range items {
		v := cmds[i].Val()
		if len(v) != 2 {
			continue
		}
		value, ok1 := v[0].(string)
		term, ok2 := v[1].(string)
		if ok1 && ok2 && term == strconv.FormatInt(h.Token, 10) {
			out[i] = value
		}
	}
	return out, nil
}
