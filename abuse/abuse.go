// Package abuse is leasegate's user-lock engine with abuse control: the
// port of the PHP Lock class (addUserLock / clearUserLock). Each attempt on
// a (lock name, user) pair counts in a window; the first attempt at or
// above the lock's max_attempts flags the user once for that window, in the
// flagged registry and the abuse log; policies may ban users who are flagged again
// and again; operators review, clear, ban and unban.
//
// It has no HTTP in it. Every operation on one user's state is one Lua
// script or one MULTI on keys that share the user's hash tag; see
// docs/abuse.md for the key layout and why the cross-user index is
// written in a second step.
package abuse

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/outbox"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/scripts"
)

// ErrBadReply: a script answered in a shape it never documents. Every
// other error of the engine is the domain's (package leasegate: e.g.
// ErrBanned with *BannedError, ErrUserNotFound, ErrAllowlisted,
// ErrBadCursor, ErrUnavailable for every Redis failure), so callers that
// speak only the domain recognise them with errors.Is.
var ErrBadReply = errors.New("abuse: unexpected script reply")

// reply decodes the scripts' replies; its errors wrap ErrBadReply.
var reply = scriptreply.Decoder{Bad: ErrBadReply}

var (
	_ leasegate.UserLockService = (*Service)(nil)
	_ leasegate.FlagRegistry    = (*Service)(nil)
)

// Options configure a Service.
type Options struct {
	// Prefix starts every key (default keyspace.DefaultPrefix), the same
	// as the lock engine.
	Prefix string
	// Policies; the zero value means DefaultPolicies().
	Policies Policies
	// Log is the abuse log: one record per flagged window, one per
	// operator action. Default: no log.
	Log *zap.Logger
	// Metrics counts attempts, flags and bans. Default: a private registry.
	Metrics *metrics.Metrics
	// Outbox writes every flag, ban, unban and clear to the webhook outbox
	// stream (keyspace.Outbox) for package webhook to deliver; off when no
	// webhook is configured. OutboxMaxLen bounds the stream
	// (DefaultOutboxMaxLen when 0).
	Outbox       bool
	OutboxMaxLen int64
}

// Service runs user locks and abuse control. It is safe for concurrent use.
type Service struct {
	rdb  redis.UniversalClient
	opts Options
	keys keyspace.Space
	log  *zap.Logger
	m    *metrics.Metrics
	// out writes the webhook events (on Redis Cluster in a second step,
	// outbox.go).
	out *outbox.Writer
	// cluster: Redis Cluster, where the attempt log has a slot of its own
	// and is written in a second step (backtest.go).
	cluster bool
}

// New returns a Service on rdb.
func New(rdb redis.UniversalClient, opts Options) *Service {
	if opts.Policies.IsZero() {
		opts.Policies = DefaultPolicies()
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.NewStandalone()
	}
	keys := keyspace.Space{Prefix: opts.Prefix}
	out := outbox.New(rdb, keys, outbox.Options{On: opts.Outbox, MaxLen: opts.OutboxMaxLen,
		Log: opts.Log, Failed: opts.Metrics.WebhookOutboxFailed})
	_, cluster := rdb.(*redis.ClusterClient)
	s := &Service{rdb: rdb, opts: opts, keys: keys, log: opts.Log, m: opts.Metrics, out: out, cluster: cluster}
	s.initMetrics()
	return s
}

// initMetrics exports every known series at 0 (the lock labels of the
// policies, and operator bans), so that dashboards and rate() see them
// from the first scrape, before anyone is flagged.
func (s *Service) initMetrics() {
	locks := []string{"_default"}
	for name := range s.opts.Policies.Locks {
		locks = append(locks, name)
	}
	for _, l := range locks {
		s.m.AbuseAttempts.WithLabelValues(l, "acquired")
		s.m.AbuseAttempts.WithLabelValues(l, "repeated")
		s.m.AbuseAttempts.WithLabelValues(l, "banned")
		s.m.AbuseFlags.WithLabelValues(l)
		s.m.AbuseBans.WithLabelValues(l, "policy")
	}
	s.m.AbuseBans.WithLabelValues("", "operator")
}

// Policies returns the policies in force.
func (s *Service) Policies() Policies { return s.opts.Policies }

// metricLock is the lock label of the metrics: only names with their own
// policy get their own series, so clients cannot create unbounded series.
func (s *Service) metricLock(lock string) string {
	if _, ok := s.opts.Policies.Locks[lock]; ok {
		return lock
	}
	return "_default"
}

// Attempt is one attempt on user lock name by userID in tenant: the first
// in a window acquires it for ttl, later ones count. A banned user gets a
// *leasegate.BannedError (errors.Is leasegate.ErrBanned) and nothing is counted.
func (s *Service) Attempt(ctx context.Context, tenant, name, userID string, ttl time.Duration, meta leasegate.RequestMeta) (leasegate.UserLockResult, error) {
	ttlMS := ttl.Milliseconds()
	if ttlMS <= 0 {
		return leasegate.UserLockResult{}, fmt.Errorf("abuse: ttl %v must be at least 1ms", ttl)
	}
	pol := s.opts.Policies.For(name)
	allow := s.opts.Policies.Allowlist[userID]
	enforce, mayFlag := "1", "1"
	if pol.Shadow || allow {
		enforce = "0"
	}
	if allow {
		mayFlag = "0"
	}
	k := s.keys.User(tenant, userID)
	var flagID, banID string
	if s.out.On() {
		flagID, banID = outbox.NewID(), outbox.NewID()
	}
	keys, more := s.attemptKeys(k, tenant, name, pol)
	v, arr, status, err := reply.RunFlagged(ctx, s.rdb, scripts.UserAttempt, "attempt", keys,
		append([]any{ttlMS, pol.MaxAttempts, enforce, mayFlag, pol.BanAfterFlags, pol.BanFor.Milliseconds(),
			s.opts.Policies.FlagRetention.Milliseconds(), userID, name,
			strconv.FormatFloat(pol.factor(), 'g', -1, 64), pol.maxBan().Milliseconds(), leasegate.MaxEvidence,
			flagID, banID, tenant, s.out.MaxLen()}, more...)...)
	if err != nil {
		return leasegate.UserLockResult{}, err
	}
	switch {
	case status == -1 && len(arr) == 4:
		until, err1 := msField(arr[1])
		now, err2 := msField(arr[2])
		if err := errors.Join(err1, err2); err != nil {
			return leasegate.UserLockResult{}, err
		}
		s.m.AbuseAttempts.WithLabelValues(s.metricLock(name), "banned").Inc()
		s.logAfter(ctx, tenant, name, arr[3], now, ttlMS)
		return leasegate.UserLockResult{}, &leasegate.BannedError{Until: until, Remaining: until.Sub(now), RateLimit: leasegate.RateLimit{
			Policy: name, Quota: int64(pol.MaxAttempts), Window: cmp.Or(pol.Rolling, ttl), Reset: until.Sub(now),
		}}
	case status == 1 && len(arr) == 12:
	default:
		return leasegate.UserLockResult{}, fmt.Errorf("%w: attempt: %v", ErrBadReply, v)
	}
	n, ok1 := arr[1].(int64)
	flaggedNow, ok2 := arr[5].(int64)
	times, ok3 := arr[6].(int64)
	banNumber, ok4 := arr[8].(int64)
	count, ok5 := arr[10].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return leasegate.UserLockResult{}, fmt.Errorf("%w: attempt: %v", ErrBadReply, v)
	}
	start, err1 := msField(arr[2])
	exp, err2 := msField(arr[3])
	now, err3 := msField(arr[4])
	banUntilMS, err4 := intField(arr[7])
	reset, err5 := msField(arr[11])
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return leasegate.UserLockResult{}, err
	}
	res := leasegate.UserLockResult{
		Acquired:    n == 1,
		Attempts:    n,
		Flagged:     !allow && count >= int64(pol.MaxAttempts),
		FlaggedNow:  flaggedNow == 1,
		WindowStart: start,
		ExpiresAt:   exp,
	}
	if banUntilMS > 0 {
		res.BannedUntil = time.UnixMilli(banUntilMS).UTC()
		res.BanNumber = banNumber
	}
	res.RateLimit = leasegate.RateLimit{
		Policy:    name,
		Quota:     int64(pol.MaxAttempts),
		Window:    cmp.Or(pol.Rolling, exp.Sub(start)),
		Remaining: max(int64(pol.MaxAttempts)-count, 0),
		Reset:     max(reset.Sub(now), 0),
	}
	s.logAfter(ctx, tenant, name, arr[9], now, ttlMS)
	ml := s.metricLock(name)
	if res.Acquired {
		s.m.AbuseAttempts.WithLabelValues(ml, "acquired").Inc()
	} else {
		s.m.AbuseAttempts.WithLabelValues(ml, "repeated").Inc()
	}
	if res.FlaggedNow {
		s.out.After(ctx, "id", flagID, "type", EventFlag, "tenant", tenant, "user_id", userID, "lock", name,
			"at", outbox.Millis(now), "attempts", n, "times_flagged", times)
		if !res.BannedUntil.IsZero() {
			s.out.After(ctx, "id", banID, "type", EventBan, "tenant", tenant, "user_id", userID, "lock", name,
				"at", outbox.Millis(now), "banned_until", outbox.Millis(res.BannedUntil), "ban_number", res.BanNumber, "source", "policy",
				"actor", "policy", "reason", fmt.Sprintf("automatic ban %d: flagged %d times on lock %s", res.BanNumber, times, name))
		}
		s.m.AbuseFlags.WithLabelValues(ml).Inc()
		s.index(ctx, tenant, name, userID, now)
		fields := []zap.Field{
			zap.String("event", "flagged"),
			zap.String("tenant", tenant),
			zap.String("lock", name),
			zap.String("user_id", userID),
			zap.Int64("attempts", n),
			zap.Int("max_attempts", pol.MaxAttempts),
			zap.Int64("times_flagged", times),
			zap.String("window_start", stamp(start)),
			zap.String("window_end", stamp(exp)),
			zap.String("client_ip", meta.ClientIP),
			zap.String("request_id", meta.RequestID),
			zap.Bool("shadow", pol.Shadow),
		}
		if !res.BannedUntil.IsZero() {
			s.m.AbuseBans.WithLabelValues(ml, "policy").Inc()
			fields = append(fields, zap.String("banned_until", stamp(res.BannedUntil)),
				zap.Int64("ban_number", res.BanNumber))
		}
		s.log.Warn("user flagged for repeated attempts", fields...)
	}
	return res, nil
}

// index records a flag in the tenant's cross-user indexes (all locks, and
// this lock), newest first. These keys cannot share the user's hash tag,
// so this is a second step after the attempt script; a failure here is
// logged and leaves the flag readable by user (Get) and listed again at
// its next flag. Entries older than the retention are pruned here, and
// the index expires a retention after its newest flag.
func (s *Service) index(ctx context.Context, tenant, lock, userID string, at time.Time) {
	// The flag is already recorded: finish indexing it even if the client
	// has gone away meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	member := indexMember(lock, userID)
	score := float64(at.UnixMilli())
	oldest := strconv.FormatInt(at.Add(-s.opts.Policies.FlagRetention).UnixMilli(), 10)
	for _, key := range []string{s.keys.FlagIndex(tenant, ""), s.keys.FlagIndex(tenant, lock)} {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ZAdd(ctx, key, redis.Z{Score: score, Member: member})
			p.ZRemRangeByScore(ctx, key, "-inf", "("+oldest)
			// Its newest entry is this one: when it is past the retention
			// the whole index is, so the key goes then (lock names are the
			// clients' to choose; no index outlives its flags).
			p.PExpire(ctx, key, s.opts.Policies.FlagRetention)
			return nil
		})
		if err != nil {
			s.m.RedisErrors.WithLabelValues("abuse_index").Inc()
			s.log.Error("could not index a flag; it stays readable by user id",
				zap.String("tenant", tenant), zap.String("lock", lock),
				zap.String("user_id", userID), zap.Error(err))
		}
	}
}

// Clear releases user lock name of userID (the PHP clearUserLock): the
// counter is gone and the next attempt starts a new window. leasegate.ErrUserNotFound
// when there is none.
func (s *Service) Clear(ctx context.Context, tenant, name, userID string) error {
	n, err := s.rdb.Del(ctx, s.keys.User(tenant, userID).Counter(name)).Result()
	if err != nil {
		return scriptreply.Unavailable(err)
	}
	if n == 0 {
		return leasegate.ErrUserNotFound
	}
	return nil
}

func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func msField(v interface{}) (time.Time, error) {
	n, err := intField(v)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n).UTC(), nil
}

func intField(v interface{}) (int64, error) {
	switch x := v.(type) {
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %q is not an integer", ErrBadReply, x)
		}
		return n, nil
	case int64:
		return x, nil
	}
	return 0, fmt.Errorf("%w: %v (%T) is not an integer", ErrBadReply, v, v)
}
