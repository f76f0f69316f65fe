package abuse

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// The n-th automatic ban of a user on a lock lasts ban_seconds ×
// factor^(n-1), capped by max_ban_seconds; the count lives on the flag
// record for the flag retention. Operator bans neither count nor
// escalate. Time moves with miniredis (Advance), so minutes take none.
func TestAutomaticBansEscalate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := miniBackend(t)
	pol := DefaultPolicies()
	pol.FlagRetention = 24 * time.Hour
	pol.Locks["login"] = Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Minute, Factor: 2, MaxBanFor: 5 * time.Minute}
	svc, lb := newService(t, b, pol)

	// flagWindow makes attempts until the window flags (the second) and
	// returns that attempt's result.
	flagWindow := func(t *testing.T, user string) leasegate.UserLockResult {
		t.Helper()
		if _, err := svc.Attempt(ctx, "", "login", user, 10*time.Second, leasegate.RequestMeta{}); err != nil {
			t.Fatalf("first attempt: %v", err)
		}
		res, err := svc.Attempt(ctx, "", "login", user, 10*time.Second, leasegate.RequestMeta{})
		if err != nil {
			t.Fatalf("second attempt: %v", err)
		}
		if !res.FlaggedNow {
			t.Fatalf("got flagged_now false at the threshold")
		}
		return res
	}

	want := []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, d := range want {
		n := int64(i + 1)
		res := flagWindow(t, "mallory")
		if got := res.BannedUntil.Sub(b.Now()); got != d {
			t.Errorf("ban %d: got %v, want %v", n, got, d)
		}
		if res.BanNumber != n {
			t.Errorf("ban %d: got ban number %d", n, res.BanNumber)
		}
		if got := pol.Locks["login"].BanLength(n); got != d {
			t.Errorf("BanLength(%d): got %v, want %v (the script and Go must agree)", n, got, d)
		}
		uf, err := svc.Get(ctx, "", "mallory")
		if err != nil {
			t.Fatal(err)
		}
		if got := uf.Flags[0].AutomaticBans; got != n {
			t.Errorf("ban %d: got automatic_bans %d on the flag record", n, got)
		}
		if uf.Ban == nil || uf.Ban.Source != "policy" || uf.Ban.By != "policy" {
			t.Fatalf("ban %d: got ban %+v, want a policy ban", n, uf.Ban)
		}
		// While banned nothing counts; once it is over, the next window
		// may flag again.
		if _, err := svc.Attempt(ctx, "", "login", "mallory", 10*time.Second, leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrBanned) {
			t.Fatalf("ban %d: got %v during the ban, want ErrBanned", n, err)
		}
		b.Advance(t, d+time.Millisecond)
	}
	if got := len(lb.Events(t, "flagged")); got != len(want) {
		t.Errorf("got %d flagged records, want %d", got, len(want))
	}

	t.Run("an operator ban neither counts nor escalates", func(t *testing.T) {
		ban, err := svc.BanUser(ctx, "", "mallory", 30*time.Second, "manual", leasegate.RequestMeta{Operator: "op"})
		if err != nil {
			t.Fatal(err)
		}
		if got := ban.Until.Sub(b.Now()); got != 30*time.Second {
			t.Errorf("got operator ban of %v, want 30s", got)
		}
		uf, err := svc.Get(ctx, "", "mallory")
		if err != nil {
			t.Fatal(err)
		}
		if uf.Flags[0].AutomaticBans != int64(len(want)) || uf.Ban.Source != "operator" || uf.Ban.By != "op" {
			t.Errorf("got automatic_bans %d, ban %+v", uf.Flags[0].AutomaticBans, uf.Ban)
		}
		b.Advance(t, 31*time.Second)
	})

	t.Run("the count ends with the flag retention", func(t *testing.T) {
		b.Advance(t, pol.FlagRetention+time.Second)
		res := flagWindow(t, "mallory")
		if got := res.BannedUntil.Sub(b.Now()); got != time.Minute || res.BanNumber != 1 {
			t.Errorf("got ban %v number %d after the retention, want 1m number 1", got, res.BanNumber)
		}
	})

	t.Run("each user has a count of their own", func(t *testing.T) {
		res := flagWindow(t, "trudy")
		if res.BanNumber != 1 {
			t.Errorf("got ban number %d for a new user, want 1", res.BanNumber)
		}
	})
}

func TestBanLength(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		p    Policy
		n    int64
		want time.Duration
	}{
		{"factor 0 is 1: every ban the same", Policy{BanFor: time.Hour}, 7, time.Hour},
		{"factor 1.5, third ban", Policy{BanFor: 100 * time.Second, Factor: 1.5}, 3, 225 * time.Second},
		{"no cap: a year at most", Policy{BanFor: 24 * time.Hour, Factor: 10}, 9, 365 * 24 * time.Hour},
		{"capped", Policy{BanFor: time.Minute, Factor: 3, MaxBanFor: 10 * time.Minute}, 4, 10 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.BanLength(c.n); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
