package abuse

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/scriptreply"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/scripts"
)

// The attempt log (docs/abuse.md, "Backtesting a policy"): one stream per
// (tenant, lock), an entry per attempt (scripts/prelude/attempt_log.lua
// writes it; the attempt script decides its outcome). The outcomes of an
// entry's "o":
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

// attemptKeys are the attempt script's KEYS and its ARGV[17..20]: the
// attempt log (not in KEYS when off, or on Redis Cluster, where it has a
// slot of its own: the script returns the entry and logAfter writes it)
// and the rolling span of pol.
func (s *Service) attemptKeys(k keyspace.User, tenant, lock string, pol Policy) ([]string, []any) {
	keys := append([]string{k.Counter(lock), k.Ban(), k.Flag(lock), k.Flags()}, s.out.Keys()...)
	var logAt any = 0
	switch {
	case !s.logOn():
	case s.cluster:
		logAt = "r"
	default:
		keys = append(keys, s.keys.AttemptLog(tenant, lock))
		logAt = len(keys)
	}
	return keys, []any{logAt, s.opts.Policies.AttemptLogMaxEntries, s.opts.Policies.AttemptLogRetention.Milliseconds(),
		pol.Rolling.Milliseconds()}
}

// logAfter writes the entry d that the attempt script returned (on Redis
// Cluster; "" elsewhere) with the script's own writer. A gateway that dies
// in between loses the entry (docs/abuse.md).
func (s *Service) logAfter(ctx context.Context, tenant, lock string, d any, now time.Time, ttlMS int64) {
	if e, _ := d.(string); e != "" {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := scripts.AttemptLog.Run(ctx, s.rdb, []string{s.keys.AttemptLog(tenant, lock)}, e, now.UnixMilli(),
			s.opts.Policies.AttemptLogMaxEntries, s.opts.Policies.AttemptLogRetention.Milliseconds(), ttlMS).Err()
		if err != nil {
			s.m.RedisErrors.WithLabelValues("abuse_attempt_log").Inc()
		}
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
	// The rolling span: its attempt times and the time of its last flag.
	rolling     []int64
	rollingFlag int64
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
	count := st.n
	if span := p.Rolling.Milliseconds(); span > 0 {
		st.rolling = append(slices.DeleteFunc(st.rolling, func(t int64) bool { return t <= e.at-span }), e.at)
		st.rolling = st.rolling[max(0, len(st.rolling)-p.MaxAttempts):]
		count, already = int64(len(st.rolling)), st.rollingFlag > 0 && e.at-st.rollingFlag < span
		if !allow && count >= int64(p.MaxAttempts) && !already {
			st.rollingFlag = e.at
		}
	}
	var ban int64
	if !allow && count >= int64(p.MaxAttempts) && !already {
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

// Backtest implements leasegate.PolicyBacktester: validate the query,
// scan the lock's log from its oldest entry (so windows and escalation
// counts that began before q.Since follow the live rules), replay it
// under both policies, and page the users that differ. It writes nothing.
func (s *Service) Backtest(ctx context.Context, tenant string, q leasegate.BacktestQuery) (leasegate.Backtest, error) {
	plan, err := s.planBacktest(ctx, tenant, q)
	if err == nil {
		err = s.scanLog(ctx, plan.key, plan.to, plan.step)
	}
	if err != nil {
		return leasegate.Backtest{}, err
	}
	return plan.page(), nil
}

// backtestPlan is a checked backtest query, its defaults filled in, and
// its replay.
type backtestPlan struct {
	q             leasegate.BacktestQuery
	key, after    string // after: the cursor, lists go on after this user id
	inForce, cand Policy
	from, to      int64 // ms
	flagRetention int64 // ms
	only          map[string]bool
	recorded      leasegate.BacktestRecorded
	index         map[string]int32
	users         []backtestUser // in one block: a backtest's time is mostly its look-ups
}

// planBacktest checks q: every refused field is named in one
// leasegate.Invalid. It reads Redis's time and whether the log exists.
func (s *Service) planBacktest(ctx context.Context, tenant string, q leasegate.BacktestQuery) (*backtestPlan, error) {
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
	if len(q.Users) > leasegate.MaxBacktestPageSize {
		bad("users", fmt.Sprintf("must be an array of at most %d user ids", leasegate.MaxBacktestPageSize))
	}
	after, err := base64.RawURLEncoding.DecodeString(q.Cursor)
	if err != nil {
		bad("cursor", "must be a next_cursor from a previous answer")
	}
	key := s.keys.AttemptLog(tenant, q.Lock)
	var now time.Time
	if leasegate.UserLockName.MatchString(q.Lock) {
		if !s.logOn() {
			bad("lock", "the attempt log is off: start the gateway with --attempt-log-max-entries above 0 (policy file: attempt_log_max_entries)")
		}
		pipe := s.rdb.Pipeline()
		tc, ec := pipe.Time(ctx), pipe.Exists(ctx, key)
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, scriptreply.Unavailable(err)
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
		return nil, leasegate.Invalid(fields...)
	}
	only := map[string]bool{}
	for _, u := range q.Users {
		only[u] = true
	}
	return &backtestPlan{q: q, index: map[string]int32{}, key: key, after: string(after), inForce: inForce, cand: cand, from: q.Since.UnixMilli(),
		to: q.Until.UnixMilli(), flagRetention: s.opts.Policies.FlagRetention.Milliseconds(), only: only}, nil
}

// step replays one entry under both policies and counts it when it is in
// the range.
func (p *backtestPlan) step(e entry) {
	if len(p.only) > 0 && !p.only[e.user] {
		return
	}
	i, ok := p.index[e.user]
	if !ok {
		i = int32(len(p.users))
		p.index[e.user] = i
		p.users = append(p.users, backtestUser{})
	}
	u := &p.users[i]
	external := p.inForce.isExternal(&u.inForce, e)
	oIn, _, bIn := p.inForce.step(&u.inForce, e, p.flagRetention, external)
	oCand, _, bCand := p.cand.step(&u.cand, e, p.flagRetention, external)
	if e.at < p.from || e.at > p.to {
		return
	}
	u.attempts++
	rec := &p.recorded
	rec.Attempts++
	if len(u.at) == leasegate.MaxBacktestAttempts {
		u.at = append(u.at[:0], u.at[1:]...)
	}
	u.at = append(u.at, e.at)
	if e.o == outcomeBanned {
		rec.Refused++
	} else if st := e.at - e.w; st != u.lastStart {
		u.lastStart = st
		rec.Windows++
	}
	if e.o == outcomeFlagged {
		rec.FlaggedWindows++
		if e.b > 0 {
			rec.Bans++
		}
	}
	u.tIn.add(oIn, bIn, e.at)
	u.tCand.add(oCand, bCand, e.at)
}

// page is the answer: the totals, and one page of each list of users
// that differ.
func (p *backtestPlan) page() leasegate.Backtest {
	out := leasegate.Backtest{Lock: p.q.Lock, Since: leasegate.Stamp{Time: p.q.Since.UTC()}, Until: leasegate.Stamp{Time: p.q.Until.UTC()},
		Recorded: p.recorded, InForce: outcome(p.inForce), Candidate: outcome(p.cand)}
	ids := make([]string, 0, len(p.users))
	for id, i := range p.index {
		if p.users[i].attempts > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out.Recorded.Users = int64(len(ids))
	for _, c := range leasegate.BacktestChanges {
		out.List(c).Users = []leasegate.BacktestUser{}
	}
	for _, id := range ids {
		u := &p.users[p.index[id]]
		count(&out.InForce, u.tIn)
		count(&out.Candidate, u.tCand)
		for _, c := range leasegate.BacktestChanges {
			if !changed(c, u.tIn, u.tCand) {
				continue
			}
			l := out.List(c)
			l.Count++
			if id <= p.after && p.after != "" {
				continue
			}
			if len(l.Users) == p.q.Limit {
				l.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(l.Users[p.q.Limit-1].UserID))
				continue
			}
			l.Users = append(l.Users, u.report(id))
		}
	}
	return out
}

// changed reports whether a user whose tallies are in (the policy in
// force) and c (the candidate) belongs on list ch.
func changed(ch leasegate.BacktestChange, in, c tally) bool {
	return [...]bool{
		leasegate.NewlyFlagged:     in.windows == 0 && c.windows > 0,
		leasegate.NoLongerFlagged:  in.windows > 0 && c.windows == 0,
		leasegate.NewlyBanned:      in.bans == 0 && c.bans > 0,
		leasegate.NoLongerBanned:   in.bans > 0 && c.bans == 0,
		leasegate.BanLengthChanged: in.bans > 0 && c.bans > 0 && in.banMS != c.banMS,
	}[ch]
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
		Shadow: p.Shadow, RollingWindowSeconds: int64(p.Rolling / time.Second)}
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
		field, te := "policy", (*json.UnmarshalTypeError)(nil)
		if errors.As(err, &te) && te.Field != "" {
			field += "." + te.Field
		}
		return Policy{}, []leasegate.FieldError{{Field: field, Message: "must be a policy-file lock entry: " + err.Error()}}
	}
	p := j.apply(inForce)
	probs := p.problems()
	for i := range probs {
		probs[i].Field = "policy." + probs[i].Field
	}
	return p, probs
}
