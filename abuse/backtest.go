package abuse

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
)

// The attempt log (docs/abuse.md, "Backtesting a policy"): one stream per
// (tenant, lock), an entry per attempt, written by the attempt script (on
// Redis Cluster, where the stream has a slot of its own, by logAfter in
// a second step). The outcomes of an entry's "o":
const (
	outcomeHeld        = "held"
	outcomeRepeated    = "repeated"
	outcomeFlagged     = "flagged"
	outcomeBanned      = "banned" // refused: the user was banned
	outcomeAllowlisted = "allowlisted"
	outcomeShadow      = "shadow"
)

// logPage is how many entries one XRANGE of a backtest reads: each call
// keeps Redis busy for about a millisecond (docs/abuse.md).
const logPage = 2000

// logOn reports whether attempts are logged.
func (s *Service) logOn() bool { return s.opts.Policies.AttemptLogMaxEntries > 0 }

// logArgs are the attempt script's KEYS for the log and its ARGV[17..20].
// With the log off (the default), or on Redis Cluster where logAfter
// writes the entry, there are none: the hot path sends the script no
// more than it did before the log existed.
func (s *Service) logArgs(keys []string, tenant, lock, outcome string) ([]string, []any) {
	if !s.logOn() || s.cluster {
		return keys, nil
	}
	keys = append(keys, s.keys.AttemptLog(tenant, lock))
	return keys, []any{len(keys), s.opts.Policies.AttemptLogMaxEntries, s.opts.Policies.AttemptLogRetention.Milliseconds(), outcome}
}

// logAfter writes an attempt's entry in a second step, on Redis Cluster
// only: the same fields as the script's record (a gateway that dies in
// between loses the entry; docs/abuse.md).
func (s *Service) logAfter(ctx context.Context, tenant, lock, user string, now time.Time, n, w, ttl int64, outcome string, ban int64) {
	if !s.logOn() || !s.cluster {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	key, ret := s.keys.AttemptLog(tenant, lock), s.opts.Policies.AttemptLogRetention
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: s.opts.Policies.AttemptLogMaxEntries, Approx: true,
			Values: []any{"d", fmt.Sprintf("%d %d %d %s %d %s", n, w, ttl, outcome, ban, user), "ms", now.UnixMilli()}})
		p.XTrimMinIDApprox(ctx, key, strconv.FormatInt(now.Add(-ret).UnixMilli(), 10), 0)
		p.PExpire(ctx, key, ret)
		return nil
	})
	if err != nil {
		s.m.RedisErrors.WithLabelValues("abuse_attempt_log").Inc()
	}
}

// scanLog calls f on every entry of the log at key up to time to (ms),
// oldest first, reading logPage entries per XRANGE. The next page is read
// while f runs on this one (Redis and the replay work side by side), and
// the raw reply is read, not go-redis's XMessage: a map per entry was
// half the time of a backtest over a million attempts.
func (s *Service) scanLog(ctx context.Context, key string, to int64, f func(entry)) error {
	type page struct {
		entries []any
		err     error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan page, 1)
	go func() {
		defer close(pages)
		start := "-"
		for {
			p, err := s.rdb.Do(ctx, "XRANGE", key, start, to, "COUNT", logPage).Slice()
			if err == nil && len(p) == logPage {
				_, start, err = parseEntry(p[len(p)-1])
				start = "(" + start
			}
			select {
			case pages <- page{p, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(p) < logPage {
				return
			}
		}
	}()
	for p := range pages {
		if p.err != nil {
			if errors.Is(p.err, ErrBadReply) {
				return p.err
			}
			return scriptreply.Unavailable(p.err)
		}
		for _, m := range p.entries {
			e, _, err := parseEntry(m)
			if err != nil {
				return err
			}
			f(e)
		}
	}
	return nil
}

// entry is one logged attempt.
type entry struct {
	at        int64 // Redis time, ms
	user      string
	n, w, ttl int64
	o         string
	b         int64
}

// parseEntry reads one XRANGE entry: [id, ["d", "n w t o b user"]], and
// "ms" after it when the id is not the attempt's time. It reads d in
// place, without allocating: it runs a million times in a backtest.
func parseEntry(m any) (entry, string, error) {
	var e entry
	kv, _ := m.([]any)
	if len(kv) != 2 {
		return e, "", fmt.Errorf("%w: attempt log entry %v", ErrBadReply, m)
	}
	id, _ := kv[0].(string)
	fields, _ := kv[1].([]any)
	var ok bool
	e.at, _, ok = cutInt(id, '-')
	for i := 0; ok && i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		switch k {
		case "d":
			var okw, okt, okb bool
			e.n, v, ok = cutInt(v, ' ')
			e.w, v, okw = cutInt(v, ' ')
			e.ttl, v, okt = cutInt(v, ' ')
			e.o, v, _ = strings.Cut(v, " ")
			e.b, e.user, okb = cutInt(v, ' ')
			ok = ok && okw && okt && okb
		case "ms":
			e.at, _, ok = cutInt(v, 0)
		}
	}
	if !ok || e.o == "" {
		return e, id, fmt.Errorf("%w: attempt log entry %s: %v", ErrBadReply, id, fields)
	}
	return e, id, nil
}

// cutInt reads the decimal number s starts with, up to sep (or the end),
// and returns it and what follows sep.
func cutInt(s string, sep byte) (int64, string, bool) {
	i, neg := 0, len(s) > 0 && s[0] == '-'
	if neg {
		i++
	}
	var n int64
	start := i
	for ; i < len(s) && s[i] != sep; i++ {
		if s[i] < '0' || s[i] > '9' || i-start > 17 {
			return 0, "", false
		}
		n = n*10 + int64(s[i]-'0')
	}
	if neg {
		n = -n
	}
	rest := ""
	if i < len(s) {
		rest = s[i+1:]
	}
	return n, rest, i > start
}

// replayState is one user's state under one policy: the attempt script's
// counter window, flag record and ban, as the replay sees them.
type replayState struct {
	seen              bool
	n, start, exp     int64
	flagged           bool
	times, bans, last int64
	banUntil          int64
}

// step is the attempt script's decision on e under p: the same rules,
// with Policy.BanLength for the escalation. external (isExternal): the
// log says a ban from outside this lock's policy (an operator's, another
// lock's) refused e; it refuses under p too, unless p does not enforce
// bans.
// It returns what the script would have logged: the outcome, n and b.
func (p Policy) step(st *replayState, e entry, retention int64, external bool) (string, int64, int64) {
	allow := e.o == outcomeAllowlisted
	enforce := !p.Shadow && !allow
	if external {
		st.banUntil = e.b // it replaced the ban in place, as ban.lua does
	}
	seen := st.seen
	st.seen = true
	if enforce && st.banUntil > e.at {
		return outcomeBanned, 0, st.banUntil
	}
	already := false
	switch {
	case st.exp > e.at:
		st.n++
		already = st.flagged
	case !seen && e.n > 1:
		// A window that began before the log: as recorded.
		st.n, st.start = e.n, e.at-e.w
		st.exp = st.start + e.ttl
		st.flagged = !allow && e.n-1 >= int64(p.MaxAttempts)
		already = st.flagged
	default:
		st.n, st.start, st.exp, st.flagged = 1, e.at, e.at+e.ttl, false
	}
	var ban int64
	if !allow && st.n >= int64(p.MaxAttempts) && !already {
		st.flagged = true
		if st.times > 0 && e.at > st.last+retention {
			st.times, st.bans = 0, 0 // the flag record expired
		}
		st.times++
		st.last = e.at
		if enforce && p.BanAfterFlags > 0 && p.BanFor > 0 && st.times >= int64(p.BanAfterFlags) {
			nb := st.bans + 1
			if end := e.at + p.BanLength(nb).Milliseconds(); st.banUntil < end {
				st.bans, st.banUntil, ban = nb, end, end
			}
		}
		return outcomeFlagged, st.n, ban
	}
	switch {
	case allow:
		return outcomeAllowlisted, st.n, 0
	case p.Shadow:
		return outcomeShadow, st.n, 0
	case st.n == 1:
		return outcomeHeld, st.n, 0
	}
	return outcomeRepeated, st.n, 0
}

// isExternal reports whether the ban that refused e (in the log) is not
// the one the replay of the policy in force p holds.
func (p Policy) isExternal(st *replayState, e entry) bool {
	return e.o == outcomeBanned && (p.Shadow || st.banUntil <= e.at || st.banUntil != e.b)
}

// tally is what one policy did to one user in the range.
type tally struct {
	windows, bans, banMS, refused int64
}

// backtestUser is one user's replay under both policies.
type backtestUser struct {
	inForce, cand replayState
	tIn, tCand    tally
	attempts      int64
	at            []int64
	lastStart     int64
}

// Backtest implements leasegate.PolicyBacktester: it reads the lock's
// log in pages (XRANGE COUNT logPage) from its oldest entry, so windows
// and escalation counts that began before q.Since follow the live rules,
// and counts the decisions inside [Since, Until]. It writes nothing.
func (s *Service) Backtest(ctx context.Context, tenant string, q leasegate.BacktestQuery) (leasegate.Backtest, error) {
	var fields []leasegate.FieldError
	bad := func(f, m string) { fields = append(fields, leasegate.FieldError{Field: f, Message: m}) }
	inForce, known := s.opts.Policies.Locks[q.Lock]
	if !known {
		inForce = s.opts.Policies.Default
	}
	cand, perr := candidate(inForce, q.Policy)
	fields = append(fields, perr...)
	if q.Limit == 0 {
		q.Limit = leasegate.DefaultBacktestPageSize
	}
	if q.Limit < 1 || q.Limit > leasegate.MaxBacktestPageSize {
		bad("limit", fmt.Sprintf("must be from 1 to %d", leasegate.MaxBacktestPageSize))
	}
	after, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	if err != nil {
		bad("cursor", "must be a next_cursor from a previous answer")
	}
	key := s.keys.AttemptLog(tenant, q.Lock)
	var now time.Time
	if leasegate.UserLockName.MatchString(q.Lock) {
		if !s.logOn() {
			bad("lock", "the attempt log is off (attempt_log_max_entries 0)")
		}
		pipe := s.rdb.Pipeline()
		tc, ec := pipe.Time(ctx), pipe.Exists(ctx, key)
		if _, err := pipe.Exec(ctx); err != nil {
			return leasegate.Backtest{}, scriptreply.Unavailable(err)
		}
		now = tc.Val()
		if !known && ec.Val() == 0 && s.logOn() {
			bad("lock", "no attempts recorded on this lock and no policy of its own")
		}
	} else {
		bad("lock", "must be a user lock name ([A-Za-z0-9._-]{1,64})")
	}
	oldest := now.Add(-s.opts.Policies.AttemptLogRetention)
	if !q.Since.IsZero() && q.Since.Before(oldest) {
		bad("since", "is before the attempt log's retention ("+s.opts.Policies.AttemptLogRetention.String()+")")
	}
	if q.Since.IsZero() {
		q.Since = oldest
	}
	// now is zero when the lock's name is refused (Redis was not asked):
	// the range is then checked only as given, so a bad name is the one
	// field named, not also an until "before since".
	if !now.IsZero() && (q.Until.IsZero() || q.Until.After(now)) {
		q.Until = now
	}
	if !q.Until.IsZero() && q.Until.Before(q.Since) {
		bad("until", "is before since")
	}
	if len(fields) > 0 {
		return leasegate.Backtest{}, leasegate.Invalid(fields...)
	}
	only := map[string]bool{}
	for _, u := range q.Users {
		only[u] = true
	}
	from, to := q.Since.UnixMilli(), q.Until.UnixMilli()
	retention := s.opts.Policies.FlagRetention.Milliseconds()
	index, users := map[string]int32{}, []backtestUser{} // in one block: a backtest's time is mostly its look-ups
	out := leasegate.Backtest{Lock: q.Lock, Since: leasegate.Stamp{Time: q.Since.UTC()}, Until: leasegate.Stamp{Time: q.Until.UTC()}}
	err = s.scanLog(ctx, key, to, func(e entry) {
		if len(only) > 0 && !only[e.user] {
			return
		}
		i, ok := index[e.user]
		if !ok {
			i = int32(len(users))
			index[e.user] = i
			users = append(users, backtestUser{})
		}
		u := &users[i]
		external := inForce.isExternal(&u.inForce, e)
		oIn, _, bIn := inForce.step(&u.inForce, e, retention, external)
		oCand, _, bCand := cand.step(&u.cand, e, retention, external)
		if e.at < from || e.at > to {
			return
		}
		u.attempts++
		out.Recorded.Attempts++
		if len(u.at) == leasegate.MaxBacktestAttempts {
			u.at = append(u.at[:0], u.at[1:]...)
		}
		u.at = append(u.at, e.at)
		if e.o == outcomeBanned {
			out.Recorded.Refused++
		} else if st := e.at - e.w; st != u.lastStart {
			u.lastStart = st
			out.Recorded.Windows++
		}
		if e.o == outcomeFlagged {
			out.Recorded.FlaggedWindows++
			if e.b > 0 {
				out.Recorded.Bans++
			}
		}
		u.tIn.add(oIn, bIn, e.at)
		u.tCand.add(oCand, bCand, e.at)
	})
	if err != nil {
		return leasegate.Backtest{}, err
	}
	out.InForce, out.Candidate = outcome(inForce), outcome(cand)
	ids := make([]string, 0, len(users))
	for id, i := range index {
		if users[i].attempts > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out.Recorded.Users = int64(len(ids))
	lists := []*leasegate.BacktestList{&out.NewlyFlagged, &out.NoLongerFlagged, &out.NewlyBanned, &out.NoLongerBanned, &out.BanLengthChanged}
	for _, l := range lists {
		l.Users = []leasegate.BacktestUser{}
	}
	for _, id := range ids {
		u := &users[index[id]]
		count(&out.InForce, u.tIn)
		count(&out.Candidate, u.tCand)
		in, c := u.tIn, u.tCand
		for i, differs := range []bool{
			in.windows == 0 && c.windows > 0, in.windows > 0 && c.windows == 0,
			in.bans == 0 && c.bans > 0, in.bans > 0 && c.bans == 0,
			in.bans > 0 && c.bans > 0 && in.banMS != c.banMS,
		} {
			if !differs {
				continue
			}
			l := lists[i]
			l.Count++
			if id <= string(after) && len(after) > 0 {
				continue
			}
			if len(l.Users) == q.Limit {
				l.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(l.Users[q.Limit-1].UserID))
				continue
			}
			l.Users = append(l.Users, u.report(id))
		}
	}
	return out, nil
}

func (t *tally) add(o string, ban, at int64) {
	switch o {
	case outcomeFlagged:
		t.windows++
		if ban > 0 {
			t.bans++
			t.banMS += ban - at
		}
	case outcomeBanned:
		t.refused++
	}
}

// outcome is p in a backtest's answer.
func outcome(p Policy) leasegate.BacktestOutcome {
	return leasegate.BacktestOutcome{MaxAttempts: p.MaxAttempts, BanAfterFlags: p.BanAfterFlags,
		BanSeconds: int64(p.BanFor / time.Second), Factor: p.factor(), MaxBanSeconds: int64(p.maxBan() / time.Second),
		Shadow: p.Shadow}
}

// count adds one user's tally to o.
func count(o *leasegate.BacktestOutcome, t tally) {
	o.FlaggedWindows += t.windows
	o.Bans += t.bans
	o.Refused += t.refused
	if t.windows > 0 {
		o.FlaggedUsers++
	}
	if t.bans > 0 {
		o.BannedUsers++
	}
}

func (u *backtestUser) report(id string) leasegate.BacktestUser {
	r := leasegate.BacktestUser{UserID: id, Attempts: u.attempts, AttemptsAt: make([]leasegate.Stamp, len(u.at)),
		InForce:   leasegate.BacktestUserOutcome{FlaggedWindows: u.tIn.windows, Bans: u.tIn.bans, BanSeconds: u.tIn.banMS / 1000},
		Candidate: leasegate.BacktestUserOutcome{FlaggedWindows: u.tCand.windows, Bans: u.tCand.bans, BanSeconds: u.tCand.banMS / 1000}}
	for i, at := range u.at {
		r.AttemptsAt[i] = leasegate.Stamp{Time: time.UnixMilli(at).UTC()}
	}
	return r
}

// candidate is the policy in force with the fields of raw (a policy-file
// lock entry) on top, checked as the policy file is.
func candidate(inForce Policy, raw json.RawMessage) (Policy, []leasegate.FieldError) {
	if len(raw) == 0 {
		return inForce, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var j policyJSON
	if err := dec.Decode(&j); err != nil {
		return Policy{}, []leasegate.FieldError{{Field: "policy", Message: "must be a policy-file lock entry: " + err.Error()}}
	}
	p := j.apply(inForce)
	probs := p.problems()
	for i := range probs {
		probs[i].Field = "policy." + probs[i].Field
	}
	return p, probs
}
