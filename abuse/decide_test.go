package abuse

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// decideCase is a sequence of attempts by one user on lock "l" under
// pol, each after wait, and the outcome each must get.
type decideCase struct {
	name  string
	pol   Policy
	allow bool
	ttl   time.Duration
	steps []decideStep
}

type decideStep struct {
	wait time.Duration
	want string
}

func steps(wait time.Duration, want ...string) []decideStep {
	out := make([]decideStep, len(want))
	for i, w := range want {
		out[i].want = w
	}
	if len(out) > 0 {
		out[0].wait = wait
	}
	return out
}

var decideCases = []decideCase{
	{name: "the attempt that reaches max_attempts flags, once a window",
		pol: Policy{MaxAttempts: 3}, ttl: time.Minute,
		steps: steps(0, outcomeHeld, outcomeRepeated, outcomeFlagged, outcomeRepeated)},
	{name: "a window that runs out starts a new count",
		pol: Policy{MaxAttempts: 3}, ttl: 500 * time.Millisecond,
		steps: append(steps(0, outcomeHeld, outcomeRepeated), steps(510*time.Millisecond, outcomeHeld, outcomeRepeated, outcomeFlagged)...)},
	{name: "the second flagged window bans and the ban refuses",
		pol: Policy{MaxAttempts: 2, BanAfterFlags: 2, BanFor: time.Minute}, ttl: 500 * time.Millisecond,
		steps: append(steps(0, outcomeHeld, outcomeFlagged), steps(510*time.Millisecond, outcomeHeld, outcomeFlagged, outcomeBanned)...)},
	{name: "a shadow lock flags but neither bans nor refuses",
		pol: Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Minute, Shadow: true}, ttl: time.Minute,
		steps: steps(0, outcomeShadow, outcomeFlagged, outcomeShadow)},
	// Issue 45: max_attempts - 1 attempts at the end of one window and as
	// many at the start of the next.
	{name: "fixed windows do not flag a burst across a window's edge",
		pol: Policy{MaxAttempts: 5}, ttl: 500 * time.Millisecond,
		steps: append(steps(0, outcomeHeld, outcomeRepeated, outcomeRepeated, outcomeRepeated),
			steps(510*time.Millisecond, outcomeHeld, outcomeRepeated, outcomeRepeated, outcomeRepeated)...)},
	{name: "a rolling span of 60 s flags that burst at its 5th attempt",
		pol: Policy{MaxAttempts: 5, Rolling: time.Minute}, ttl: 500 * time.Millisecond,
		steps: append(steps(0, outcomeHeld, outcomeRepeated, outcomeRepeated, outcomeRepeated),
			steps(510*time.Millisecond, outcomeFlagged, outcomeRepeated, outcomeRepeated, outcomeRepeated)...)},
	{name: "a rolling span flags again only a span after its last flag",
		pol: Policy{MaxAttempts: 2, Rolling: time.Second}, ttl: time.Minute,
		steps: append(steps(0, outcomeHeld, outcomeFlagged, outcomeRepeated, outcomeRepeated),
			steps(1100*time.Millisecond, outcomeRepeated, outcomeFlagged)...)},
	{name: "a rolling span's second flag bans",
		pol: Policy{MaxAttempts: 2, Rolling: time.Second, BanAfterFlags: 2, BanFor: time.Minute}, ttl: time.Minute,
		steps: append(steps(0, outcomeHeld, outcomeFlagged), steps(1100*time.Millisecond, outcomeRepeated, outcomeFlagged, outcomeBanned)...)},
	{name: "an allowlisted user is never flagged",
		pol: Policy{MaxAttempts: 2}, allow: true, ttl: time.Minute,
		steps: steps(0, outcomeAllowlisted, outcomeAllowlisted, outcomeAllowlisted)},
}

// The attempt script (live) and the replay (Policy.step) decide every
// case alike: the script's logged outcomes and the replay's are the
// case's, on miniredis, redis-server and a 3-master Cluster (where the
// log is written in a second step).
func TestAttemptScriptAndReplayDecideAlike(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, rdb redis.UniversalClient, wait func(t *testing.T, d time.Duration)) {
		for i, c := range decideCases {
			t.Run(c.name, func(t *testing.T) {
				pol := DefaultPolicies()
				pol.AttemptLogMaxEntries = 1000
				pol.Locks["l"] = c.pol
				if c.allow {
					pol.Allowlist["u"] = true
				}
				svc := New(rdb, Options{Prefix: fmt.Sprintf("lgtest:decide%d:", i), Policies: pol, Log: zap.NewNop()})
				for _, s := range c.steps {
					if s.wait > 0 {
						wait(t, s.wait)
					}
					if _, err := svc.Attempt(context.Background(), "acme", "l", "u", c.ttl, leasegate.RequestMeta{}); err != nil && !errors.Is(err, leasegate.ErrBanned) {
						t.Fatal(err)
					}
				}
				log := logged(t, svc, "acme", "l")
				if len(log) != len(c.steps) {
					t.Fatalf("got %d log entries, want %d", len(log), len(c.steps))
				}
				var st replayState
				for j, e := range log {
					o, _, _ := c.pol.step(&st, e, pol.FlagRetention.Milliseconds(), c.pol.isExternal(&st, e))
					if e.o != c.steps[j].want || o != c.steps[j].want {
						t.Errorf("attempt %d: script got %s, replay got %s, want %s", j+1, e.o, o, c.steps[j].want)
					}
				}
			})
		}
	}
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		run(t, b.RDB, func(t *testing.T, d time.Duration) { b.Advance(t, d) })
	})
	t.Run("on a 3-master Cluster", func(t *testing.T) {
		cl := redistest.StartCluster(t, 3)
		run(t, cl.Client(t), func(_ *testing.T, d time.Duration) { time.Sleep(d) }) // time must pass on the servers' clocks
	})
}

// With a rolling span, RateLimit tells the span: w the span, r the
// attempts left before the flag, t until the oldest counted attempt
// leaves it; the counter, which holds the span, expires a span after
// the last attempt (its window is over before), and Clear clears it.
func TestRollingSpanRateLimitAndExpiry(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	pol := policies(5)
	pol.Locks["checkin"] = Policy{MaxAttempts: 5, Rolling: time.Minute}
	svc, _ := newService(t, b, pol)
	var res leasegate.UserLockResult
	for range 3 {
		var err error
		if res, err = svc.Attempt(context.Background(), "acme", "checkin", "u", time.Second, leasegate.RequestMeta{}); err != nil {
			t.Fatal(err)
		}
		b.Advance(t, 10*time.Second)
	}
	// Attempts at 0, 10 and 20 s (each in a window of its own); now is 30 s.
	want := leasegate.RateLimit{Policy: "checkin", Quota: 5, Window: time.Minute, Remaining: 2, Reset: 40 * time.Second}
	if res.RateLimit != want || res.Attempts != 1 || res.Flagged {
		t.Errorf("got %+v (attempts %d, flagged %v), want %+v, 1, false", res.RateLimit, res.Attempts, res.Flagged, want)
	}
	key := svc.keys.User("acme", "u").Counter("checkin")
	if ttl := b.RDB.PTTL(context.Background(), key).Val(); ttl != time.Minute-10*time.Second {
		t.Errorf("got the counter (which holds the span) expiring in %v, want a minute after the last attempt (50s from now)", ttl)
	}
	// DELETE clears the span with the window: the next attempt counts 1.
	if err := svc.Clear(context.Background(), "acme", "checkin", "u"); err != nil {
		t.Fatal(err)
	}
	res, err := svc.Attempt(context.Background(), "acme", "checkin", "u", time.Second, leasegate.RequestMeta{})
	if err != nil || res.RateLimit.Remaining != 4 || !res.Acquired {
		t.Errorf("after Clear: got %+v (acquired %v), %v; want 4 left and acquired", res.RateLimit, res.Acquired, err)
	}
}

// A lock whose policy changes from fixed windows to a rolling span and
// back: the rolling span's first window after a flagged fixed one drops
// the fixed window's flagged mark, so the fixed window after it flags.
func TestPolicyChangeFromFixedToRollingAndBack(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	fixed, rolling := policies(2), policies(5)
	rolling.Default.Rolling = 10 * time.Second
	fsvc, _ := newService(t, b, fixed)
	rsvc, _ := newService(t, b, rolling)
	attempt := func(svc *Service) leasegate.UserLockResult {
		t.Helper()
		res, err := svc.Attempt(context.Background(), "acme", "login", "u", 2*time.Second, leasegate.RequestMeta{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	attempt(fsvc)
	if !attempt(fsvc).FlaggedNow {
		t.Fatal("fixed windows: the 2nd attempt did not flag")
	}
	attempt(rsvc) // the flagged fixed window goes on
	b.Advance(t, 3*time.Second)
	if res := attempt(rsvc); !res.Acquired || res.FlaggedNow {
		t.Errorf("rolling, a new window: got acquired %v, flagged now %v; want true, false", res.Acquired, res.FlaggedNow)
	}
	if res := attempt(fsvc); res.Attempts != 2 || !res.FlaggedNow {
		t.Errorf("fixed again, the same window: got attempt %d, flagged now %v; want 2, true", res.Attempts, res.FlaggedNow)
	}
}
