package abuse

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/outbox"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/scripts"
)

func encodeCursor(score int64, member string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(score, 10) + "\n" + member))
}

func decodeCursor(c string) (int64, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", leasegate.ErrBadCursor
	}
	sc, member, ok := strings.Cut(string(b), "\n")
	if !ok || member == "" || !strings.Contains(member, ":") {
		return 0, "", leasegate.ErrBadCursor
	}
	score, err := strconv.ParseInt(sc, 10, 64)
	if err != nil || score < 0 {
		return 0, "", leasegate.ErrBadCursor
	}
	return score, member, nil
}

// List returns flags of tenant newest first, optionally of one lock, a
// page at a time. Cleared and expired flags are not listed.
func (s *Service) List(ctx context.Context, tenant string, q leasegate.FlagQuery) (leasegate.FlagPage, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = leasegate.DefaultFlagPageSize
	}
	limit = min(limit, leasegate.MaxFlagPageSize)
	var (
		curScore  int64
		curMember string
		haveCur   bool
	)
	if q.Cursor != "" {
		var err error
		if curScore, curMember, err = decodeCursor(q.Cursor); err != nil {
			return leasegate.FlagPage{}, err
		}
		haveCur = true
	}
	key := s.keys.FlagIndex(tenant, q.Lock)
	maxScore := "+inf"
	if haveCur {
		maxScore = strconv.FormatInt(curScore, 10)
	}
	type entry struct {
		score  int64
		member string
		flag   leasegate.Flag
	}
	var (
		items []entry
		stale []entry
	)
	batch := int64(limit + 1)
	batch = max(batch, 64)
	for offset := int64(0); len(items) <= limit; offset += batch {
		zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, key, &redis.ZRangeBy{
			Max: maxScore, Min: "-inf", Offset: offset, Count: batch,
		}).Result()
		if err != nil {
			return leasegate.FlagPage{}, scriptreply.Unavailable(err)
		}
		var cands []entry
		for _, z := range zs {
			member, ok := z.Member.(string)
			if !ok {
				return leasegate.FlagPage{}, fmt.Errorf("%w: index member %v", ErrBadReply, z.Member)
			}
			score := int64(z.Score)
			if haveCur && score == curScore && member >= curMember {
				continue // shown on an earlier page
			}
			cands = append(cands, entry{score: score, member: member})
		}
		members := make([]string, len(cands))
		for i, c := range cands {
			members[i] = c.member
		}
		flags, err := s.readFlags(ctx, tenant, members)
		if err != nil {
			return leasegate.FlagPage{}, err
		}
		for i, f := range flags {
			if f == nil {
				stale = append(stale, cands[i])
				continue
			}
			cands[i].flag = *f
			items = append(items, cands[i])
		}
		if int64(len(zs)) < batch {
			break
		}
	}
	if len(stale) > 0 {
		// Cleared or expired records: drop them from this index, each
		// only while it is the entry read above (a user flagged again
		// meanwhile has a new score and stays listed).
		pairs := make([]interface{}, 0, 2*len(stale))
		for _, e := range stale {
			pairs = append(pairs, e.member, e.score)
		}
		if err := scripts.Unindex.Run(ctx, s.rdb, []string{key}, pairs...).Err(); err != nil {
			s.log.Debug("pruning the flag index", zap.Error(err))
		}
	}
	var p leasegate.FlagPage
	for i, e := range items {
		if i == limit {
			last := items[limit-1]
			p.NextCursor = encodeCursor(last.score, last.member)
			break
		}
		p.Items = append(p.Items, e.flag)
	}
	return p, nil
}

// readFlags reads the flag records named by index members (nil where the
// record is gone), with each user's ban, in one pipeline.
func (s *Service) readFlags(ctx context.Context, tenant string, members []string) ([]*leasegate.Flag, error) {
	n := len(members)
	if n == 0 {
		return nil, nil
	}
	recs := make([]*redis.MapStringStringCmd, n)
	bans := make([]*redis.SliceCmd, n)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < n; i++ {
			lock, user, _ := strings.Cut(members[i], ":")
			k := s.keys.User(tenant, user)
			recs[i] = p.HGetAll(ctx, k.Flag(lock))
			bans[i] = p.HMGet(ctx, k.Ban(), banFields...)
		}
		return nil
	})
	if err != nil {
		return nil, scriptreply.Unavailable(err)
	}
	out := make([]*leasegate.Flag, n)
	for i := 0; i < n; i++ {
		f, ok := decodeFlag(recs[i].Val())
		if !ok {
			continue
		}
		if b := decodeBan(bans[i].Val()); b != nil {
			f.BannedUntil = b.Until
			f.Ban = b
		}
		out[i] = &f
	}
	return out, nil
}

var banFields = []string{"until", "reason", "by", "source", "lock", "created"}

func decodeFlag(m map[string]string) (leasegate.Flag, bool) {
	if len(m) == 0 || m["user"] == "" && m["lock"] == "" {
		return leasegate.Flag{}, false
	}
	times, err1 := strconv.ParseInt(m["times"], 10, 64)
	peak, err2 := strconv.ParseInt(m["peak"], 10, 64)
	first, err3 := strconv.ParseInt(m["first"], 10, 64)
	last, err4 := strconv.ParseInt(m["last"], 10, 64)
	if errors.Join(err1, err2, err3, err4) != nil {
		// Not a record this package wrote (e.g. edited by hand): skip it
		// rather than show zeros.
		return leasegate.Flag{}, false
	}
	bans, _ := strconv.ParseInt(m["bans"], 10, 64)
	ws, _ := strconv.ParseInt(m["window_start"], 10, 64)
	return leasegate.Flag{
		AttemptsAt:     decodeEvidence(ws, m["evidence"]),
		UserID:         m["user"],
		Lock:           m["lock"],
		TimesFlagged:   times,
		PeakAttempts:   peak,
		FirstFlaggedAt: time.UnixMilli(first).UTC(),
		LastFlaggedAt:  time.UnixMilli(last).UTC(),
		AutomaticBans:  bans,
	}, true
}

func decodeBan(v []interface{}) *leasegate.Ban {
	if len(v) != len(banFields) {
		return nil
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	until, err := strconv.ParseInt(str(0), 10, 64)
	if err != nil {
		return nil
	}
	created, _ := strconv.ParseInt(str(5), 10, 64)
	return &leasegate.Ban{
		Until:   time.UnixMilli(until).UTC(),
		Reason:  str(1),
		By:      str(2),
		Source:  str(3),
		Lock:    str(4),
		Created: time.UnixMilli(created).UTC(),
	}
}

// Get returns the flags and ban of one user, newest flag first, or
// leasegate.ErrUserNotFound when there are neither.
func (s *Service) Get(ctx context.Context, tenant, userID string) (leasegate.UserFlags, error) {
	k := s.keys.User(tenant, userID)
	locks, err := s.rdb.SMembers(ctx, k.Flags()).Result()
	if err != nil {
		return leasegate.UserFlags{}, scriptreply.Unavailable(err)
	}
	sort.Strings(locks)
	recs := make([]*redis.MapStringStringCmd, len(locks))
	var ban *redis.SliceCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range locks {
			recs[i] = p.HGetAll(ctx, k.Flag(l))
		}
		ban = p.HMGet(ctx, k.Ban(), banFields...)
		return nil
	})
	if err != nil {
		return leasegate.UserFlags{}, scriptreply.Unavailable(err)
	}
	uf := leasegate.UserFlags{UserID: userID, Ban: decodeBan(ban.Val())}
	for _, r := range recs {
		f, ok := decodeFlag(r.Val())
		if !ok {
			continue
		}
		if uf.Ban != nil {
			f.BannedUntil = uf.Ban.Until
			f.Ban = uf.Ban
		}
		uf.Flags = append(uf.Flags, f)
	}
	sort.SliceStable(uf.Flags, func(i, j int) bool { return uf.Flags[i].LastFlaggedAt.After(uf.Flags[j].LastFlaggedAt) })
	if len(uf.Flags) == 0 && uf.Ban == nil {
		return leasegate.UserFlags{}, leasegate.ErrUserNotFound
	}
	return uf, nil
}

// ClearFlags removes every flag record of the user and any ban, and writes
// an audit record naming meta.Operator. leasegate.ErrUserNotFound when there was neither.
// A cleared user is listed again only when flagged again.
func (s *Service) ClearFlags(ctx context.Context, tenant, userID string, meta leasegate.RequestMeta) error {
	k := s.keys.User(tenant, userID)
	var (
		locks  []string
		banned int64
	)
	var (
		sm *redis.StringSliceCmd
		ex *redis.IntCmd
	)
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		sm = p.SMembers(ctx, k.Flags())
		ex = p.Exists(ctx, k.Ban())
		return nil
	})
	if err != nil {
		return scriptreply.Unavailable(err)
	}
	locks, banned = sm.Val(), ex.Val()
	if len(locks) == 0 && banned == 0 {
		return leasegate.ErrUserNotFound
	}
	sort.Strings(locks)
	id := outbox.NewID()
	dels := make([]*redis.IntCmd, len(locks))
	lasts := make([]*redis.SliceCmd, len(locks))
	var banDel *redis.IntCmd
	// One MULTI on keys of one hash tag. Only the locks read above leave
	// the set, so a flag on another lock that lands meanwhile stays.
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, l := range locks {
			lasts[i] = p.HMGet(ctx, k.Flag(l), "last")
			dels[i] = p.Del(ctx, k.Flag(l))
		}
		if len(locks) > 0 {
			members := make([]interface{}, len(locks))
			for i, l := range locks {
				members[i] = l
			}
			p.SRem(ctx, k.Flags(), members...)
		}
		banDel = p.Del(ctx, k.Ban())
		if s.out.Inline() {
			// In the same MULTI: the event exists if and only if the
			// clear ran. (A ban that expired since the read above makes a
			// clear of nothing: the answer is then 404 and the event says
			// the same user was cleared; receivers treat clear as
			// idempotent.)
			p.XAdd(ctx, s.out.Args("id", id, "type", EventClear, "tenant", tenant, "user_id", userID,
				"locks", strings.Join(locks, ","), "actor", meta.Operator))
		}
		return nil
	})
	if err != nil {
		return scriptreply.Unavailable(err)
	}
	var cleared []string
	for i, d := range dels {
		if d.Val() > 0 {
			cleared = append(cleared, locks[i])
		}
	}
	hadBan := banDel.Val() > 0
	for i, l := range locks {
		// Unindex the flag deleted above, by its last_flagged_at (its
		// index score): a flag recorded since then has a new score and
		// stays listed. A record that was already gone leaves its entry
		// to List, which skips and prunes it.
		last, ok := lastFlagged(lasts[i].Val())
		if !ok {
			continue
		}
		m := indexMember(l, userID)
		for _, key := range []string{s.keys.FlagIndex(tenant, ""), s.keys.FlagIndex(tenant, l)} {
			if err := scripts.Unindex.Run(ctx, s.rdb, []string{key}, m, last).Err(); err != nil {
				// The records are gone, so List skips and prunes them.
				s.log.Error("could not unindex a cleared flag", zap.Error(err))
			}
		}
	}
	if len(cleared) == 0 && !hadBan {
		return leasegate.ErrUserNotFound
	}
	s.out.After(ctx, "id", id, "type", EventClear, "tenant", tenant, "user_id", userID,
		"locks", strings.Join(cleared, ","), "actor", meta.Operator)
	s.audit("flags_cleared", tenant, userID, meta,
		zap.Strings("locks", cleared), zap.Bool("ban_lifted", hadBan))
	return nil
}

// lastFlagged reads a flag record's "last" from an HMGET reply.
func lastFlagged(v []interface{}) (int64, bool) {
	if len(v) != 1 {
		return 0, false
	}
	str, ok := v[0].(string)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(str, 10, 64)
	return n, err == nil
}

// BanUser bans the user from every user lock of the tenant for d
// (replacing any ban in place) and writes an audit record.
// Allowlisted users give leasegate.ErrAllowlisted.
func (s *Service) BanUser(ctx context.Context, tenant, userID string, d time.Duration, reason string, meta leasegate.RequestMeta) (leasegate.Ban, error) {
	if s.opts.Policies.Allowlist[userID] {
		return leasegate.Ban{}, leasegate.ErrAllowlisted
	}
	if d < time.Millisecond || d > leasegate.MaxBan {
		return leasegate.Ban{}, fmt.Errorf("abuse: ban length %v out of range", d)
	}
	id := outbox.NewID()
	v, err := scripts.Ban.Run(ctx, s.rdb, append([]string{s.keys.User(tenant, userID).Ban()}, s.out.Keys()...),
		d.Milliseconds(), reason, meta.Operator, id, tenant, userID, s.out.MaxLen()).Result()
	if err != nil {
		return leasegate.Ban{}, scriptreply.Unavailable(err)
	}
	arr, ok := v.([]interface{})
	if !ok || len(arr) != 2 {
		return leasegate.Ban{}, fmt.Errorf("%w: ban: %v", ErrBadReply, v)
	}
	until, err1 := msField(arr[0])
	now, err2 := msField(arr[1])
	if err := errors.Join(err1, err2); err != nil {
		return leasegate.Ban{}, err
	}
	s.out.After(ctx, "id", id, "type", EventBan, "tenant", tenant, "user_id", userID, "at", outbox.Millis(now),
		"banned_until", outbox.Millis(until), "source", "operator", "actor", meta.Operator, "reason", reason)
	s.m.AbuseBans.WithLabelValues("", "operator").Inc()
	s.audit("banned", tenant, userID, meta,
		zap.String("banned_until", stamp(until)), zap.Int64("seconds", int64(d/time.Second)),
		zap.String("reason", reason))
	return leasegate.Ban{Until: until, Reason: reason, By: meta.Operator, Source: "operator", Created: now}, nil
}

// Unban lifts the user's ban (flags stay) and writes an audit record.
// leasegate.ErrUserNotFound when there is no ban.
func (s *Service) Unban(ctx context.Context, tenant, userID string, meta leasegate.RequestMeta) error {
	id := outbox.NewID()
	n, err := scripts.Unban.Run(ctx, s.rdb, append([]string{s.keys.User(tenant, userID).Ban()}, s.out.Keys()...),
		id, tenant, userID, meta.Operator, s.out.MaxLen()).Int64()
	if err != nil {
		return scriptreply.Unavailable(err)
	}
	if n == 0 {
		return leasegate.ErrUserNotFound
	}
	s.out.After(ctx, "id", id, "type", EventUnban, "tenant", tenant, "user_id", userID, "actor", meta.Operator)
	s.audit("unbanned", tenant, userID, meta)
	return nil
}

func (s *Service) audit(event, tenant, userID string, meta leasegate.RequestMeta, extra ...zap.Field) {
	fields := append([]zap.Field{
		zap.String("event", event),
		zap.String("tenant", tenant),
		zap.String("user_id", userID),
		zap.String("operator", meta.Operator),
		zap.String("client_ip", meta.ClientIP),
		zap.String("request_id", meta.RequestID),
	}, extra...)
	s.log.Info("operator action", fields...)
}

// decodeEvidence unpacks a flag record's evidence: attempt times as
// comma-separated milliseconds after the window's start (at most
// leasegate.MaxEvidence, oldest first). Anything unreadable is skipped.
func decodeEvidence(start int64, packed string) []time.Time {
	if packed == "" || start <= 0 {
		return nil
	}
	out := make([]time.Time, 0, strings.Count(packed, ",")+1)
	for _, f := range strings.Split(packed, ",") {
		off, err := strconv.ParseInt(f, 10, 64)
		if err != nil || off < 0 {
			continue
		}
		out = append(out, time.UnixMilli(start+off).UTC())
	}
	return out
}
