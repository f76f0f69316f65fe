// Package claim is leasegate's claims on Redis: work that must happen
// once (docs/claims.md). A claim is a pending lease with an owner and a
// fencing token until its holder completes it with a result; from then on
// the claim answers with that result, byte for byte, for keep_seconds.
// Every transition is one atomic Lua script.
package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/scripts"
)

// ErrBadReply: a script answered in a shape it never documents.
var ErrBadReply = errors.New("claim: unexpected script reply")

var reply = scriptreply.Decoder{Bad: ErrBadReply}

// DefaultRetention is how long a pending claim's record outlives its
// lease, so the next holder's token is larger even when the Redis clock
// steps back.
const DefaultRetention = 24 * time.Hour

// Options configure a Service. Of the engines' Config, claims use
// Prefix, MinReplicas and ReplicaTimeout: with MinReplicas, every claim
// that gives the caller the pending lease, and every completion, waits
// until that many replicas have it (rdb must then be a *redis.Client or a
// *redis.ClusterClient). Not acknowledged in time, both return
// redislock.ErrNotReplicated: a new claim is abandoned first, so the
// caller does not hold it; a renewal (the same owner claiming again) and
// a completion are left in place, since the holder may be in the middle
// of the work, or done with it.
type Options struct {
	redislock.Config
	// Retention, see DefaultRetention.
	Retention time.Duration
	// Audit receives one record per forced removal, naming the operator
	// (the abuse log's style). Nil logs nothing.
	Audit *zap.Logger
}

// Service is leasegate.ClaimService on Redis. It is safe for concurrent
// use.
type Service struct {
	rdb   redis.Scripter
	rep   redislock.Replication
	opts  Options
	keys  keyspace.Space
	audit *zap.Logger
}

var _ leasegate.ClaimService = (*Service)(nil)

// New returns a Service on rdb.
func New(rdb redis.Scripter, opts Options) *Service {
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	audit := opts.Audit
	if audit == nil {
		audit = zap.NewNop()
	}
	opts.Config = opts.Config.Defaults()
	rep := opts.Replication(rdb)
	return &Service{rdb: rdb, rep: rep, opts: opts, keys: keyspace.Space{Prefix: opts.Prefix}, audit: audit}
}

// waits is the scripts' argument that says the gateway waits for
// replicas after them (claim.lua's ARGV[4]).
func (s *Service) waits() string {
	if s.opts.MinReplicas > 0 {
		return "1"
	}
	return "0"
}

// Key is the key of claim (scope, key) in tenant.
func (s *Service) Key(tenant, scope, key string) string { return s.keys.Claim(tenant, scope, key) }

// Claim implements leasegate.ClaimService.
func (s *Service) Claim(ctx context.Context, tenant string, req leasegate.ClaimRequest) (leasegate.ClaimResult, error) {
	if req.TTL.Milliseconds() <= 0 {
		return leasegate.ClaimResult{}, fmt.Errorf("claim: ttl %v must be at least 1ms", req.TTL)
	}
	v, arr, flag, acked, err := s.rep.RunFlagged(ctx, reply, scripts.Claim, "claim", []string{s.Key(tenant, req.Scope, req.Key)},
		req.Owner, req.TTL.Milliseconds(), s.opts.Retention.Milliseconds(), s.waits())
	if err != nil {
		return leasegate.ClaimResult{}, err
	}
	switch {
	case flag == 1 && len(arr) == 6:
		c, err := decodeClaim(req.Scope, req.Key, req.Owner, arr[1:4])
		created, ok1 := arr[4].(int64)
		reclaimed, ok2 := arr[5].(int64)
		if err != nil || !ok1 || !ok2 {
			return leasegate.ClaimResult{}, reply.Reply("claim", v)
		}
		if acked != nil {
			if created == 1 {
				// A failover could lose it and let another do the work:
				// abandoned, so an error from Claim means "not yours".
				// If that fails, the lease runs out by its TTL.
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
				defer cancel()
				_ = s.Abandon(uctx, tenant, req.Scope, req.Key, req.Owner, c.Token)
			}
			return leasegate.ClaimResult{}, acked
		}
		return leasegate.ClaimResult{State: leasegate.ClaimPending, Claim: c, Token: c.Token,
			Created: created == 1, Reclaimed: reclaimed == 1}, nil
	case flag == 0 && len(arr) == 2:
		ms, err := reply.Int(arr[1])
		if err != nil {
			return leasegate.ClaimResult{}, reply.Reply("claim", v)
		}
		retry := time.Duration(ms) * time.Millisecond
		return leasegate.ClaimResult{}, leasegate.Detailed(leasegate.ErrClaimInProgress,
			fmt.Sprintf("another owner is doing this work; its lease has %d ms left", ms), max(retry, time.Millisecond))
	case flag == 2 && len(arr) == 4:
		res, err := decodeDone("claim", v, arr[1:])
		if err == nil && acked != nil {
			// A completion the replicas do not have yet: a failover
			// could lose it, so it is not answered as done.
			return leasegate.ClaimResult{}, acked
		}
		return res, err
	}
	return leasegate.ClaimResult{}, reply.Reply("claim", v)
}

// Complete implements leasegate.ClaimService.
func (s *Service) Complete(ctx context.Context, tenant string, req leasegate.CompleteRequest) (leasegate.ClaimResult, error) {
	keep := req.Keep
	if keep == 0 {
		keep = leasegate.DefaultClaimKeep
	}
	if keep.Milliseconds() <= 0 {
		return leasegate.ClaimResult{}, fmt.Errorf("claim: keep %v must be at least 1ms", keep)
	}
	v, arr, flag, acked, err := s.rep.RunFlagged(ctx, reply, scripts.ClaimComplete, "claim_complete", []string{s.Key(tenant, req.Scope, req.Key)},
		req.Owner, strconv.FormatInt(req.Token, 10), string(req.Result), keep.Milliseconds(), s.waits())
	if err != nil {
		return leasegate.ClaimResult{}, err
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.ClaimResult{}, leasegate.ErrClaimNotFound
	case flag == -1 && len(arr) == 1:
		return leasegate.ClaimResult{}, leasegate.ErrClaimForbidden
	case (flag == 1 || flag == 3) && len(arr) == 4:
		res, err := decodeDone("claim_complete", v, arr[1:])
		res.Replayed = flag == 3
		if err == nil && acked != nil {
			// The result stays: the work is done. Completing again with
			// the same token and result replays it.
			return leasegate.ClaimResult{}, acked
		}
		return res, err
	}
	return leasegate.ClaimResult{}, reply.Reply("claim_complete", v)
}

// Abandon implements leasegate.ClaimService.
func (s *Service) Abandon(ctx context.Context, tenant, scope, key, owner string, token int64) error {
	v, err := scripts.ClaimAbandon.Run(ctx, s.rdb, []string{s.Key(tenant, scope, key)},
		owner, strconv.FormatInt(token, 10)).Result()
	if err != nil {
		return scriptreply.Unavailable(err)
	}
	n, ok := v.(int64)
	switch {
	case ok && n == 1:
		return nil
	case ok && n == 0:
		return leasegate.ErrClaimNotFound
	case ok && n == -1:
		return leasegate.ErrClaimForbidden
	}
	return reply.Reply("claim_abandon", v)
}

// Get implements leasegate.ClaimService.
func (s *Service) Get(ctx context.Context, tenant, scope, key string) (leasegate.ClaimResult, error) {
	v, arr, flag, err := reply.RunFlagged(ctx, s.rdb, scripts.ClaimStatus, "claim_status", []string{s.Key(tenant, scope, key)})
	if err != nil {
		return leasegate.ClaimResult{}, err
	}
	switch {
	case flag == 0 && len(arr) == 1:
		return leasegate.ClaimResult{}, leasegate.ErrClaimNotFound
	case flag == 1 && len(arr) == 5:
		owner, ok := arr[1].(string)
		c, err := decodeClaim(scope, key, owner, arr[2:5])
		if err != nil || !ok {
			return leasegate.ClaimResult{}, reply.Reply("claim_status", v)
		}
		return leasegate.ClaimResult{State: leasegate.ClaimPending, Claim: c, Token: c.Token}, nil
	case flag == 2 && len(arr) == 4:
		return decodeDone("claim_status", v, arr[1:])
	}
	return leasegate.ClaimResult{}, reply.Reply("claim_status", v)
}

// Remove implements leasegate.ClaimService: the record of the removal
// names the operator, the request and the reason.
func (s *Service) Remove(ctx context.Context, tenant, scope, key, reason string, meta leasegate.RequestMeta) (leasegate.ClaimState, error) {
	v, err := scripts.ClaimRemove.Run(ctx, s.rdb, []string{s.Key(tenant, scope, key)}).Result()
	if err != nil {
		return 0, scriptreply.Unavailable(err)
	}
	n, ok := v.(int64)
	var state leasegate.ClaimState
	switch {
	case ok && n == 0:
		return 0, leasegate.ErrClaimNotFound
	case ok && n == 1:
		state = leasegate.ClaimPending
	case ok && n == 2:
		state = leasegate.ClaimDone
	default:
		return 0, reply.Reply("claim_remove", v)
	}
	s.audit.Warn("claim removed by an operator",
		zap.String("event", "claim_removed"),
		zap.String("tenant", tenant),
		zap.String("scope", scope),
		zap.String("key", key),
		zap.String("state", state.String()),
		zap.String("reason", reason),
		zap.String("operator", meta.Operator),
		zap.String("client_ip", meta.ClientIP),
		zap.String("request_id", meta.RequestID))
	return state, nil
}

// decodeClaim reads {token, claimed_at_ms, expires_at_ms}.
func decodeClaim(scope, key, owner string, f []any) (leasegate.Claim, error) {
	tok, at, exp, err := reply.Lease(f)
	if err != nil {
		return leasegate.Claim{}, err
	}
	return leasegate.Claim{Scope: scope, Key: key, Owner: owner, Token: tok, ClaimedAt: at, ExpiresAt: exp}, nil
}

// decodeDone reads {token, completed_at_ms, result}.
func decodeDone(op string, v any, f []any) (leasegate.ClaimResult, error) {
	tok, err1 := reply.Int(f[0])
	at, err2 := reply.Int(f[1])
	result, ok := f[2].(string)
	if err1 != nil || err2 != nil || !ok {
		return leasegate.ClaimResult{}, reply.Reply(op, v)
	}
	return leasegate.ClaimResult{State: leasegate.ClaimDone, Token: tok,
		CompletedAt: time.UnixMilli(at).UTC(), Result: []byte(result)}, nil
}
