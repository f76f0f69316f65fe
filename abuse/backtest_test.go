package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// backtestPolicies: "login" escalates (2 flagged windows ban, each ban
// twice the last, capped), "export" is a shadow lock, "vip" is
// allowlisted; lengths in milliseconds so a test sees them run out.
func backtestPolicies(retention time.Duration) Policies {
	p := policies(3)
	p.Locks["login"] = Policy{MaxAttempts: 3, BanAfterFlags: 2, BanFor: 30 * time.Millisecond, Factor: 2, MaxBanFor: 100 * time.Millisecond}
	p.Locks["export"] = Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: 50 * time.Millisecond, Shadow: true}
	p.Allowlist["vip"] = true
	p.FlagRetention = retention
	return p
}

// logged reads the whole attempt log of lock.
func logged(t *testing.T, svc *Service, tenant, lock string) []entry {
	t.Helper()
	var out []entry
	if err := svc.scanLog(context.Background(), svc.keys.AttemptLog(tenant, lock), time.Now().Add(time.Hour).UnixMilli(), func(e entry) {
		out = append(out, e)
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The replay of the policy in force over the log makes the decisions the
// attempt script made, entry by entry: the same outcome, count and ban
// end (so the same flagged windows, bans and lengths), on a random
// workload with escalation, a shadow lock, an allowlisted user, operator
// bans and windows that run out. LEASEGATE_BACKTEST_ATTEMPTS=N runs a
// longer one (docs/abuse.md).
func TestReplayOfThePolicyInForceMakesTheLiveDecisions(t *testing.T) {
	t.Parallel()
	attempts := 400
	if v, err := strconv.Atoi(os.Getenv("LEASEGATE_BACKTEST_ATTEMPTS")); err == nil {
		attempts = v
	}
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		// The flag record's expiry is exercised on miniredis only: on a
		// real server PEXPIRE counts from the command's time, which may be
		// a millisecond before the script's TIME. On miniredis the clock
		// moves in even milliseconds and the retention is odd, so no
		// attempt falls on the very millisecond a record expires (Redis
		// keeps a key through that millisecond, miniredis does not).
		retention := 251 * time.Millisecond
		if b.Mini == nil {
			retention = time.Hour
		}
		pol := backtestPolicies(retention)
		svc, _ := newService(t, b, pol)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(38, uint64(attempts)))
		users := []string{"u1", "u2", "u3", "u4", "vip"}
		count := map[string]int{}
		for range attempts {
			lock := []string{"login", "login", "export"}[rng.IntN(3)]
			user := users[rng.IntN(len(users))]
			ttl := time.Duration(10+rng.IntN(30)) * time.Millisecond
			if _, err := svc.Attempt(ctx, "acme", lock, user, ttl, leasegate.RequestMeta{}); err != nil && !errors.Is(err, leasegate.ErrBanned) {
				t.Fatal(err)
			}
			count[lock]++
			// An operator's ban, while none is in place (one that replaces
			// a policy ban, or an unban, is outside the log: docs/abuse.md).
			if rng.IntN(60) == 0 && user != "vip" && b.RDB.Exists(ctx, svc.keys.User("acme", user).Ban()).Val() == 0 {
				if _, err := svc.BanUser(ctx, "acme", user, 20*time.Millisecond, "test", leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			if rng.IntN(3) == 0 {
				b.Advance(t, time.Duration(2*rng.IntN(6))*time.Millisecond)
			}
		}
		seen := map[string]int{}
		for _, lock := range []string{"login", "export"} {
			replayMatches(t, svc, pol.For(lock), retention, lock, count[lock], seen)
		}
		for _, o := range []string{outcomeHeld, outcomeRepeated, outcomeFlagged, outcomeBanned, outcomeAllowlisted, outcomeShadow} {
			if seen[o] == 0 && attempts >= 400 {
				t.Errorf("the workload made no %q attempt: it tests less than it says", o)
			}
		}
	})
}

// replayMatches replays lock's log under p (the policy in force) and
// fails at the first entry whose recorded decision differs; want is the
// number of attempts made. seen counts the outcomes.
func replayMatches(t *testing.T, svc *Service, p Policy, retention time.Duration, lock string, want int, seen map[string]int) {
	t.Helper()
	log := logged(t, svc, "acme", lock)
	if len(log) != want {
		t.Fatalf("%s: got %d entries, want one per attempt (%d)", lock, len(log), want)
	}
	states := map[string]*replayState{}
	for i, e := range log {
		st := states[e.user]
		if st == nil {
			st = &replayState{}
			states[e.user] = st
		}
		o, n, ban := p.step(st, e, retention.Milliseconds(), p.isExternal(st, e))
		seen[e.o]++
		if o != e.o || n != e.n || ban != e.b {
			t.Fatalf("%s entry %d (%+v): replay got %s n=%d b=%d, live %s n=%d b=%d", lock, i, e, o, n, ban, e.o, e.n, e.b)
		}
	}
}

// On Redis Cluster the log has a slot of its own: the gateway adds each
// entry right after the script, and the replay still makes the live
// decisions.
func TestAttemptLogOnRedisCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	pol := backtestPolicies(time.Hour)
	// Windows and bans long enough to fill and to refuse on a busy machine.
	pol.Locks["login"] = Policy{MaxAttempts: 3, BanAfterFlags: 2, BanFor: time.Second}
	svc := New(cl.Client(t), Options{Prefix: "lgtest:", Policies: pol})
	ctx := context.Background()
	n := 0
	for i := range 120 {
		user := []string{"u1", "u2", "u3", "vip"}[i%7%4]
		if _, err := svc.Attempt(ctx, "acme", "login", user, 100*time.Millisecond, leasegate.RequestMeta{}); err != nil && !errors.Is(err, leasegate.ErrBanned) {
			t.Fatal(err)
		}
		n++
		if i%10 == 0 {
			time.Sleep(30 * time.Millisecond) // let windows run out; not synchronisation
		}
	}
	seen := map[string]int{}
	replayMatches(t, svc, pol.For("login"), time.Hour, "login", n, seen)
	if seen[outcomeFlagged] == 0 || seen[outcomeBanned] == 0 {
		t.Errorf("got outcomes %v, want flags and refusals among them", seen)
	}
}

// seed makes user attempt lock n times in one window of a minute.
func seed(t *testing.T, svc *Service, lock, user string, n int) {
	t.Helper()
	for range n {
		if _, err := svc.Attempt(context.Background(), "acme", lock, user, time.Minute, leasegate.RequestMeta{}); err != nil && !errors.Is(err, leasegate.ErrBanned) {
			t.Fatal(err)
		}
	}
}

// snapshot is every key of a miniredis, its value and its TTL.
func snapshot(b *redistest.Backend) string {
	s := b.Mini.Dump()
	for _, k := range b.Mini.Keys() {
		s += k + " " + b.Mini.TTL(k).String() + "\n"
	}
	return s
}

func backtest(t *testing.T, svc *Service, q leasegate.BacktestQuery) leasegate.Backtest {
	t.Helper()
	bt, err := svc.Backtest(context.Background(), "acme", q)
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

func userIDs(l leasegate.BacktestList) []string {
	var out []string
	for _, u := range l.Users {
		out = append(out, u.UserID)
	}
	return out
}

func TestBacktestListsTheUsersACandidateTreatsOtherwise(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	pol := policies(3)
	pol.Locks["login"] = Policy{MaxAttempts: 3, BanAfterFlags: 1, BanFor: time.Minute}
	svc, _ := newService(t, b, pol)
	seed(t, svc, "login", "two words", 2) // flagged only at 2 (a space: the log keeps the id whole)
	seed(t, svc, "login", "three", 3)     // flagged and banned by both
	seed(t, svc, "login", "one", 1)
	seed(t, svc, "other", "three", 1) // another lock's log
	before := snapshot(b)

	bt := backtest(t, svc, leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"max_attempts": 2, "ban_seconds": 120}`)})
	if bt.Recorded.Attempts != 6 || bt.Recorded.Users != 3 || bt.Recorded.Windows != 3 || bt.Recorded.FlaggedWindows != 1 || bt.Recorded.Bans != 1 {
		t.Errorf("got recorded %+v, want 6 attempts, 3 users, 3 windows, 1 flag, 1 ban", bt.Recorded)
	}
	if bt.InForce.FlaggedUsers != 1 || bt.Candidate.FlaggedUsers != 2 || bt.Candidate.MaxAttempts != 2 || bt.Candidate.BanSeconds != 120 {
		t.Errorf("got in force %+v, candidate %+v; want 1 and 2 flagged users, the candidate's fields", bt.InForce, bt.Candidate)
	}
	if got := userIDs(bt.NewlyFlagged); !slices.Equal(got, []string{"two words"}) || bt.NewlyFlagged.Count != 1 {
		t.Errorf("got newly flagged %v, want [two]", got)
	}
	if got := userIDs(bt.NewlyBanned); !slices.Equal(got, []string{"two words"}) {
		t.Errorf("got newly banned %v, want [two]", got)
	}
	if got := userIDs(bt.BanLengthChanged); !slices.Equal(got, []string{"three"}) {
		t.Errorf("got ban length changed %v, want [three] (60 s -> 120 s)", got)
	} else if u := bt.BanLengthChanged.Users[0]; u.InForce.BanSeconds != 60 || u.Candidate.BanSeconds != 120 || len(u.AttemptsAt) != 3 {
		t.Errorf("got %+v, want 60 s and 120 s and the three attempt times", u)
	}
	if bt.NoLongerFlagged.Count+bt.NoLongerBanned.Count != 0 {
		t.Errorf("got %+v and %+v, want nobody spared", bt.NoLongerFlagged, bt.NoLongerBanned)
	}

	spared := backtest(t, svc, leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"max_attempts": 4}`)})
	if got := userIDs(spared.NoLongerFlagged); !slices.Equal(got, []string{"three"}) || !slices.Equal(userIDs(spared.NoLongerBanned), []string{"three"}) {
		t.Errorf("got no longer flagged %v, banned %v, want [three] in both", got, userIDs(spared.NoLongerBanned))
	}
	same := backtest(t, svc, leasegate.BacktestQuery{Lock: "login"})
	if same.InForce != same.Candidate {
		t.Errorf("the policy in force against itself: got %+v and %+v, want the same", same.InForce, same.Candidate)
	}
	only := backtest(t, svc, leasegate.BacktestQuery{Lock: "login", Users: []string{"one"}, Policy: json.RawMessage(`{"max_attempts": 1}`)})
	if only.Recorded.Users != 1 || !slices.Equal(userIDs(only.NewlyFlagged), []string{"one"}) {
		t.Errorf("users [one]: got %+v, %v; want only one", only.Recorded, userIDs(only.NewlyFlagged))
	}
	paged := backtest(t, svc, leasegate.BacktestQuery{Lock: "login", Limit: 1, Policy: json.RawMessage(`{"max_attempts": 1}`)})
	if got := userIDs(paged.NewlyFlagged); paged.NewlyFlagged.Count != 2 || !slices.Equal(got, []string{"one"}) || paged.NewlyFlagged.NextCursor == "" {
		t.Fatalf("limit 1: got %v of %d, cursor %q; want [one] of 2 and a cursor", got, paged.NewlyFlagged.Count, paged.NewlyFlagged.NextCursor)
	}
	next := backtest(t, svc, leasegate.BacktestQuery{Lock: "login", Limit: 1, Cursor: paged.NewlyFlagged.NextCursor, Policy: json.RawMessage(`{"max_attempts": 1}`)})
	if got := userIDs(next.NewlyFlagged); !slices.Equal(got, []string{"two words"}) || next.NewlyFlagged.NextCursor != "" {
		t.Errorf("the next page: got %v, cursor %q; want [two] and no cursor", got, next.NewlyFlagged.NextCursor)
	}
	if after := snapshot(b); after != before {
		t.Errorf("a backtest changed Redis:\nbefore %s\nafter %s", before, after)
	}
}

func TestBacktestRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	svc, _ := newService(t, b, policies(3))
	seed(t, svc, "login", "u", 1)
	for name, c := range map[string]struct {
		q     leasegate.BacktestQuery
		field string
	}{
		"an unknown lock":             {leasegate.BacktestQuery{Lock: "nope"}, "lock"},
		"a lock name with a slash":    {leasegate.BacktestQuery{Lock: "a/b"}, "lock"},
		"since before the retention":  {leasegate.BacktestQuery{Lock: "login", Since: redistest.Epoch.Add(-25 * time.Hour)}, "since"},
		"until before since":          {leasegate.BacktestQuery{Lock: "login", Since: redistest.Epoch.Add(-time.Hour), Until: redistest.Epoch.Add(-2 * time.Hour)}, "until"},
		"max_attempts 0":              {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"max_attempts": 0}`)}, "policy.max_attempts"},
		"a factor over 100":           {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"factor": 101}`)}, "policy.factor"},
		"ban_seconds without a count": {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"ban_seconds": 60}`)}, "policy.ban_after_flags"},
		"an unknown policy field":     {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"allowlist": []}`)}, "policy"},
		"a limit over the maximum":    {leasegate.BacktestQuery{Lock: "login", Limit: 1001}, "limit"},
		"a rolling span of 0":         {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"rolling_window_seconds": 0}`)}, "policy.rolling_window_seconds"},
		"a rolling span over a day":   {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"rolling_window_seconds": 86401}`)}, "policy.rolling_window_seconds"},
		"a rolling span as a string":  {leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"rolling_window_seconds": "60"}`)}, "policy.rolling_window_seconds"},
		"a cursor not handed out":     {leasegate.BacktestQuery{Lock: "login", Cursor: "!"}, "cursor"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			_, err := svc.Backtest(context.Background(), "acme", c.q)
			var le *leasegate.Error
			if !errors.As(err, &le) || le.Code != leasegate.CodeValidation || len(le.Fields) == 0 || le.Fields[0].Field != c.field {
				t.Errorf("got %v, want a validation error naming %s", err, c.field)
			}
		})
	}
}

// With the log off, the refusal names the flag that turns it on and the
// policy key.
func TestBacktestWithTheLogOffNamesTheFlag(t *testing.T) {
	t.Parallel()
	pol := policies(3)
	pol.AttemptLogMaxEntries = 0
	svc, _ := newService(t, miniBackend(t), pol)
	_, err := svc.Backtest(context.Background(), "acme", leasegate.BacktestQuery{Lock: "login"})
	var le *leasegate.Error
	if !errors.As(err, &le) || len(le.Fields) != 1 || le.Fields[0].Field != "lock" ||
		!strings.Contains(le.Fields[0].Message, "--attempt-log-max-entries") || !strings.Contains(le.Fields[0].Message, "attempt_log_max_entries") {
		t.Errorf("got %v, want a refusal on lock naming --attempt-log-max-entries and attempt_log_max_entries", err)
	}
}

func TestBacktestOfABadLockNameNamesOnlyTheLock(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	svc, _ := newService(t, b, policies(3))
	_, err := svc.Backtest(context.Background(), "acme", leasegate.BacktestQuery{Lock: "a/b", Since: redistest.Epoch.Add(-time.Hour)})
	var le *leasegate.Error
	if !errors.As(err, &le) || le.Code != leasegate.CodeValidation || len(le.Fields) != 1 || le.Fields[0].Field != "lock" {
		t.Fatalf("got %v, want a validation error naming only lock", err)
	}
}

func TestParseEntryReadsTheOneFieldAndRefusesAnythingElse(t *testing.T) {
	t.Parallel()
	got, _, err := parseEntry([]any{"1700000000123-0", []any{"d", "3 -5 60000 flagged 1700000600123 a user id"}})
	want := entry{at: 1700000000123, user: "a user id", n: 3, w: -5, ttl: 60000, o: outcomeFlagged, b: 1700000600123}
	if err != nil || got != want {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}
	if got, _, err := parseEntry([]any{"5-1", []any{"d", "1 0 10 held 0 u", "ms", "4"}}); err != nil || got.at != 4 {
		t.Errorf("an id after the time: got %+v, %v; want at 4 from ms", got, err)
	}
	for name, m := range map[string]any{
		"no fields":         []any{"1-0", []any{}},
		"a number too long": []any{"1-0", []any{"d", "1234567890123456789 0 10 held 0 u"}},
		"a letter in n":     []any{"1-0", []any{"d", "1x 0 10 held 0 u"}},
		"an empty ttl":      []any{"1-0", []any{"d", "1 0  held 0 u"}},
		"no outcome":        []any{"1-0", []any{"d", "1 0 10"}},
		"a bad id":          []any{"x-0", []any{"d", "1 0 10 held 0 u"}},
		"not an entry":      "1-0",
	} {
		if _, _, err := parseEntry(m); !errors.Is(err, ErrBadReply) {
			t.Errorf("%s: got %v, want ErrBadReply", name, err)
		}
	}
}

// Issue 45: a user who bursts across a fixed window's edge is never
// flagged; a backtest with a rolling candidate names that user as newly
// flagged, and no one who stayed under the threshold.
func TestBacktestOfARollingCandidateFindsBurstsAcrossWindowEdges(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		svc, _ := newService(t, b, policies(5))
		attempt := func(user string, n int) {
			for range n {
				if _, err := svc.Attempt(context.Background(), "acme", "checkin", user, 500*time.Millisecond, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		attempt("burst", 4)
		attempt("calm", 4)
		b.Advance(t, 510*time.Millisecond)
		attempt("burst", 4)
		bt := backtest(t, svc, leasegate.BacktestQuery{Lock: "checkin", Policy: json.RawMessage(`{"rolling_window_seconds": 60}`)})
		if bt.InForce.FlaggedUsers != 0 || bt.Recorded.FlaggedWindows != 0 {
			t.Errorf("got in force %+v, recorded %+v; want no flag under fixed windows", bt.InForce, bt.Recorded)
		}
		if got := userIDs(bt.NewlyFlagged); !slices.Equal(got, []string{"burst"}) {
			t.Errorf("got newly flagged %v, want [burst]", got)
		}
	})
}
