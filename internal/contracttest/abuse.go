package contracttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
)

// AbuseBackend is one user-lock service and its flag registry under
// test, sharing one store.
type AbuseBackend struct {
	UserLocks leasegate.UserLockService
	Flags     leasegate.FlagRegistry
	// MaxAttempts is max_attempts of every lock name the suite uses (the
	// default policy; no policy bans), at least 2.
	MaxAttempts int
	// Allowlisted is a user id on the allowlist.
	Allowlisted string
	// Advance lets time pass on the backend's clock.
	Advance Clock
	// Outage, when set, makes every later call fail at the store. Nil
	// skips the outage case.
	Outage func(t *testing.T)
}

// operator is the meta of operator actions (over HTTP the gateway names
// the API key instead).
var operator = leasegate.RequestMeta{Operator: "contract"}

// Abuse runs the contracts of both services, UserLocks and Flags, each
// as a subtest.
func Abuse(t *testing.T, newBackend func(t *testing.T) AbuseBackend) {
	t.Run("user locks", func(t *testing.T) { UserLocks(t, newBackend) })
	t.Run("flag registry", func(t *testing.T) { Flags(t, newBackend) })
}

// UserLocks runs the contract of leasegate.UserLockService. newBackend is
// called once per case and must return services whose state no other
// case sees.
func UserLocks(t *testing.T, newBackend func(t *testing.T) AbuseBackend) {
	t.Run("the first attempt acquires; repeats count up and flag the user from max_attempts on", func(t *testing.T) {
		b := newBackend(t)
		var first leasegate.UserLockResult
		for i := int64(1); i <= int64(b.MaxAttempts)+2; i++ {
			res := mustAttempt(t, b, "login", "u-count", ttl)
			if i == 1 {
				first = res
			}
			if res.Attempts != i || res.Acquired != (i == 1) || res.Flagged != (i >= int64(b.MaxAttempts)) {
				t.Errorf("attempt %d: got attempts=%d acquired=%v flagged=%v, want %d %v %v",
					i, res.Attempts, res.Acquired, res.Flagged, i, i == 1, i >= int64(b.MaxAttempts))
			}
			if res.ExpiresAt.IsZero() || !res.ExpiresAt.Equal(first.ExpiresAt) {
				t.Errorf("attempt %d: got expires_at %v, want the window's %v", i, res.ExpiresAt, first.ExpiresAt)
			}
		}
	})

	t.Run("clear ends the window and the next attempt acquires", func(t *testing.T) {
		b := newBackend(t)
		mustAttempt(t, b, "login", "u-clear", ttl)
		mustAttempt(t, b, "login", "u-clear", ttl)
		if err := b.UserLocks.Clear(t.Context(), "", "login", "u-clear"); err != nil {
			t.Fatalf("Clear: %v", err)
		}
		if res := mustAttempt(t, b, "login", "u-clear", ttl); !res.Acquired || res.Attempts != 1 {
			t.Errorf("after clear: got acquired=%v attempts=%d, want true 1", res.Acquired, res.Attempts)
		}
	})

	t.Run("clearing a user lock nobody holds is ErrUserNotFound, and so is a second clear", func(t *testing.T) {
		b := newBackend(t)
		if err := b.UserLocks.Clear(t.Context(), "", "login", "u-nobody"); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("got %v, want ErrUserNotFound", err)
		}
		mustAttempt(t, b, "login", "u-twice", ttl)
		if err := b.UserLocks.Clear(t.Context(), "", "login", "u-twice"); err != nil {
			t.Fatalf("Clear: %v", err)
		}
		if err := b.UserLocks.Clear(t.Context(), "", "login", "u-twice"); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("second clear: got %v, want ErrUserNotFound", err)
		}
	})

	t.Run("the window ends after its ttl and the next attempt acquires", func(t *testing.T) {
		b := newBackend(t)
		first := mustAttempt(t, b, "login", "u-window", short)
		mustAttempt(t, b, "login", "u-window", short)
		b.Advance(t, short+beyond)
		res := mustAttempt(t, b, "login", "u-window", short)
		if !res.Acquired || res.Attempts != 1 || !res.ExpiresAt.After(first.ExpiresAt) {
			t.Errorf("got %+v, want acquired, attempt 1, a window after %v", res, first.ExpiresAt)
		}
	})

	t.Run("each lock name and each user counts apart", func(t *testing.T) {
		b := newBackend(t)
		mustAttempt(t, b, "lock-a", "u-1", ttl)
		for _, p := range [][2]string{{"lock-b", "u-1"}, {"lock-a", "u-2"}} {
			if res := mustAttempt(t, b, p[0], p[1], ttl); !res.Acquired || res.Attempts != 1 {
				t.Errorf("%s by %s: got acquired=%v attempts=%d, want true 1", p[0], p[1], res.Acquired, res.Attempts)
			}
		}
	})

	t.Run("an allowlisted user is never flagged", func(t *testing.T) {
		b := newBackend(t)
		for i := 1; i <= b.MaxAttempts+1; i++ {
			if res := mustAttempt(t, b, "login", b.Allowlisted, ttl); res.Flagged || res.Attempts != int64(i) {
				t.Errorf("attempt %d: got flagged=%v attempts=%d, want false %d", i, res.Flagged, res.Attempts, i)
			}
		}
		if _, err := b.Flags.Get(t.Context(), "", b.Allowlisted); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("Get: got %v, want ErrUserNotFound", err)
		}
	})

	t.Run("every attempt reports its RateLimit: the quota, the window, attempts left and time to reset", func(t *testing.T) {
		b := newBackend(t)
		for i := int64(1); i <= int64(b.MaxAttempts)+1; i++ {
			rl := mustAttempt(t, b, "login", "u-rl", ttl).RateLimit
			left := max(int64(b.MaxAttempts)-i, 0)
			if rl.Policy != "login" || rl.Quota != int64(b.MaxAttempts) || rl.Window != ttl || rl.Remaining != left {
				t.Errorf("attempt %d: got %+v, want policy login, quota %d, window %v, %d left", i, rl, b.MaxAttempts, ttl, left)
			}
			if rl.Reset <= 0 || rl.Reset > ttl {
				t.Errorf("attempt %d: got reset %v, want within the window %v", i, rl.Reset, ttl)
			}
		}
		mustBan(t, b, "u-rl", time.Hour)
		_, err := b.UserLocks.Attempt(t.Context(), "", "login", "u-rl", ttl, leasegate.RequestMeta{})
		var be *leasegate.BannedError
		if !errors.As(err, &be) {
			t.Fatalf("got %v, want a *BannedError", err)
		}
		if rl := be.RateLimit; rl.Quota != int64(b.MaxAttempts) || rl.Remaining != 0 || rl.Reset <= time.Hour-time.Minute || rl.Reset > time.Hour {
			t.Errorf("banned: got %+v, want quota %d, none left, reset about 1h", rl, b.MaxAttempts)
		}
	})

	t.Run("a banned user's attempt is refused with a BannedError and not counted", func(t *testing.T) {
		b := newBackend(t)
		mustAttempt(t, b, "login", "u-ban", ttl)
		ban := mustBan(t, b, "u-ban", time.Hour)
		_, err := b.UserLocks.Attempt(t.Context(), "", "login", "u-ban", ttl, leasegate.RequestMeta{})
		var be *leasegate.BannedError
		if !errors.Is(err, leasegate.ErrBanned) || !errors.As(err, &be) {
			t.Fatalf("got %v, want a *BannedError matching ErrBanned", err)
		}
		if be.Remaining <= time.Hour-time.Minute || be.Remaining > time.Hour {
			t.Errorf("got remaining %v, want about 1h", be.Remaining)
		}
		if d := be.Until.Sub(ban.Until).Abs(); d > time.Minute {
			t.Errorf("got until %v, want about the ban's %v", be.Until, ban.Until)
		}
		if err := b.Flags.Unban(t.Context(), "", "u-ban", operator); err != nil {
			t.Fatalf("Unban: %v", err)
		}
		if res := mustAttempt(t, b, "login", "u-ban", ttl); res.Attempts != 2 {
			t.Errorf("after unban: got attempts %d, want 2 (the refused attempt not counted)", res.Attempts)
		}
	})

	t.Run("a store outage is ErrUnavailable and acquires nothing", func(t *testing.T) {
		b := newBackend(t)
		if b.Outage == nil {
			t.Skip("the backend has no way to fail its store")
		}
		b.Outage(t)
		res, err := b.UserLocks.Attempt(t.Context(), "", "login", "u-down", ttl, leasegate.RequestMeta{})
		if !errors.Is(err, leasegate.ErrUnavailable) || res.Acquired {
			t.Errorf("Attempt: got %+v, %v; want ErrUnavailable and not acquired", res, err)
		}
		if err := b.UserLocks.Clear(t.Context(), "", "login", "u-down"); !errors.Is(err, leasegate.ErrUnavailable) {
			t.Errorf("Clear: got %v, want ErrUnavailable", err)
		}
	})
}

// Flags runs the contract of leasegate.FlagRegistry. newBackend is called
// once per case and must return services whose state no other case sees.
func Flags(t *testing.T, newBackend func(t *testing.T) AbuseBackend) {
	t.Run("a user never flagged or banned is not found by Get, ClearFlags and Unban", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		if _, err := b.Flags.Get(ctx, "", "u-none"); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("Get: got %v, want ErrUserNotFound", err)
		}
		if err := b.Flags.ClearFlags(ctx, "", "u-none", operator); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("ClearFlags: got %v, want ErrUserNotFound", err)
		}
		if err := b.Flags.Unban(ctx, "", "u-none", operator); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("Unban: got %v, want ErrUserNotFound", err)
		}
		if p, err := b.Flags.List(ctx, "", leasegate.FlagQuery{}); err != nil || len(p.Items) != 0 || p.NextCursor != "" {
			t.Errorf("List: got %+v, %v; want an empty last page", p, err)
		}
	})

	t.Run("the attempt that reaches max_attempts records a flag that Get and List show", func(t *testing.T) {
		b := newBackend(t)
		flag(t, b, "login", "u-flag")
		uf, err := b.Flags.Get(t.Context(), "", "u-flag")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if uf.UserID != "u-flag" || uf.Ban != nil || len(uf.Flags) != 1 {
			t.Fatalf("got %+v, want one flag of u-flag and no ban", uf)
		}
		f := uf.Flags[0]
		if f.UserID != "u-flag" || f.Lock != "login" || f.TimesFlagged != 1 || f.PeakAttempts != int64(b.MaxAttempts) {
			t.Errorf("got %+v, want u-flag on login, flagged once at %d attempts", f, b.MaxAttempts)
		}
		if f.FirstFlaggedAt.IsZero() || !f.LastFlaggedAt.Equal(f.FirstFlaggedAt) || !f.BannedUntil.IsZero() {
			t.Errorf("got first %v last %v banned_until %v, want first = last, not zero, and no ban", f.FirstFlaggedAt, f.LastFlaggedAt, f.BannedUntil)
		}
		p, err := b.Flags.List(t.Context(), "", leasegate.FlagQuery{})
		if err != nil || len(p.Items) != 1 || !sameFlag(p.Items[0], f) || p.NextCursor != "" {
			t.Errorf("List: got %+v, %v; want the one flag %+v", p, err, f)
		}
	})

	t.Run("List pages newest first with a cursor and filters by lock", func(t *testing.T) {
		b := newBackend(t)
		var want, wantB []string
		for i := 0; i < 5; i++ {
			lock := []string{"lock-a", "lock-b"}[i%2]
			user := fmt.Sprintf("user-%d", i)
			flag(t, b, lock, user)
			want = append([]string{lock + "/" + user}, want...)
			if lock == "lock-b" {
				wantB = append([]string{lock + "/" + user}, wantB...)
			}
			b.Advance(t, 2*time.Millisecond)
		}
		got, pages := listAll(t, b, leasegate.FlagQuery{Limit: 2})
		if strings.Join(got, ",") != strings.Join(want, ",") || pages != 3 {
			t.Errorf("got %v in %d pages of 2, want %v in 3", got, pages, want)
		}
		got, _ = listAll(t, b, leasegate.FlagQuery{Lock: "lock-b"})
		if strings.Join(got, ",") != strings.Join(wantB, ",") {
			t.Errorf("lock-b: got %v, want %v", got, wantB)
		}
	})

	t.Run("a cursor List did not hand out is ErrBadCursor", func(t *testing.T) {
		b := newBackend(t)
		for _, c := range []string{"!!", "bm9wZQ"} {
			if _, err := b.Flags.List(t.Context(), "", leasegate.FlagQuery{Cursor: c}); !errors.Is(err, leasegate.ErrBadCursor) {
				t.Errorf("cursor %q: got %v, want ErrBadCursor", c, err)
			}
		}
	})

	t.Run("BanUser bans for its length, Get and List show it, Unban lifts it once", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		flag(t, b, "login", "u-op")
		ban, err := b.Flags.BanUser(ctx, "", "u-op", time.Hour, "spam", operator)
		if err != nil {
			t.Fatalf("BanUser: %v", err)
		}
		if ban.Until.Sub(ban.Created) != time.Hour || ban.Reason != "spam" || ban.Source != "operator" || ban.By == "" {
			t.Errorf("got %+v, want an operator's ban for spam, until = created + 1h", ban)
		}
		uf, err := b.Flags.Get(ctx, "", "u-op")
		if err != nil || uf.Ban == nil || !uf.Ban.Until.Equal(ban.Until) || uf.Ban.Reason != "spam" || uf.Ban.Source != "operator" {
			t.Fatalf("Get: got %+v, %v; want the ban until %v", uf, err, ban.Until)
		}
		if len(uf.Flags) != 1 || !uf.Flags[0].BannedUntil.Equal(ban.Until) {
			t.Errorf("Get: got flags %+v, want one with banned_until %v", uf.Flags, ban.Until)
		}
		if p, err := b.Flags.List(ctx, "", leasegate.FlagQuery{}); err != nil || len(p.Items) != 1 || !p.Items[0].BannedUntil.Equal(ban.Until) {
			t.Errorf("List: got %+v, %v; want the flag with banned_until %v", p, err, ban.Until)
		}
		if err := b.Flags.Unban(ctx, "", "u-op", operator); err != nil {
			t.Fatalf("Unban: %v", err)
		}
		if uf, err := b.Flags.Get(ctx, "", "u-op"); err != nil || uf.Ban != nil || len(uf.Flags) != 1 {
			t.Errorf("Get after unban: got %+v, %v; want the flag and no ban", uf, err)
		}
		if err := b.Flags.Unban(ctx, "", "u-op", operator); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("second Unban: got %v, want ErrUserNotFound", err)
		}
	})

	t.Run("a ban alone is found by Get", func(t *testing.T) {
		b := newBackend(t)
		ban := mustBan(t, b, "u-banned-only", time.Minute)
		uf, err := b.Flags.Get(t.Context(), "", "u-banned-only")
		if err != nil || len(uf.Flags) != 0 || uf.Ban == nil || !uf.Ban.Until.Equal(ban.Until) {
			t.Errorf("got %+v, %v; want no flags and the ban until %v", uf, err, ban.Until)
		}
	})

	t.Run("ClearFlags removes the flags and the ban; the user is then not found and not listed", func(t *testing.T) {
		b := newBackend(t)
		ctx := t.Context()
		flag(t, b, "login", "u-clear")
		mustBan(t, b, "u-clear", time.Hour)
		if err := b.Flags.ClearFlags(ctx, "", "u-clear", operator); err != nil {
			t.Fatalf("ClearFlags: %v", err)
		}
		if _, err := b.Flags.Get(ctx, "", "u-clear"); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("Get: got %v, want ErrUserNotFound", err)
		}
		if p, err := b.Flags.List(ctx, "", leasegate.FlagQuery{}); err != nil || len(p.Items) != 0 {
			t.Errorf("List: got %+v, %v; want empty", p, err)
		}
		if err := b.Flags.ClearFlags(ctx, "", "u-clear", operator); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Errorf("second ClearFlags: got %v, want ErrUserNotFound", err)
		}
		if _, err := b.UserLocks.Attempt(ctx, "", "login", "u-clear", ttl, leasegate.RequestMeta{}); err != nil {
			t.Errorf("Attempt after the ban was cleared: got %v, want counted", err)
		}
	})

	t.Run("an allowlisted user cannot be banned", func(t *testing.T) {
		b := newBackend(t)
		if _, err := b.Flags.BanUser(t.Context(), "", b.Allowlisted, time.Hour, "", operator); !errors.Is(err, leasegate.ErrAllowlisted) {
			t.Errorf("got %v, want ErrAllowlisted", err)
		}
	})

	t.Run("a store outage is ErrUnavailable", func(t *testing.T) {
		b := newBackend(t)
		if b.Outage == nil {
			t.Skip("the backend has no way to fail its store")
		}
		b.Outage(t)
		if _, err := b.Flags.List(t.Context(), "", leasegate.FlagQuery{}); !errors.Is(err, leasegate.ErrUnavailable) {
			t.Errorf("List: got %v, want ErrUnavailable", err)
		}
		if _, err := b.Flags.BanUser(t.Context(), "", "u-down", time.Hour, "", operator); !errors.Is(err, leasegate.ErrUnavailable) {
			t.Errorf("BanUser: got %v, want ErrUnavailable", err)
		}
	})
}

func mustAttempt(t *testing.T, b AbuseBackend, lock, user string, ttl time.Duration) leasegate.UserLockResult {
	t.Helper()
	res, err := b.UserLocks.Attempt(t.Context(), "", lock, user, ttl, leasegate.RequestMeta{})
	if err != nil {
		t.Fatalf("Attempt(%q, %q): %v", lock, user, err)
	}
	return res
}

func mustBan(t *testing.T, b AbuseBackend, user string, d time.Duration) leasegate.Ban {
	t.Helper()
	ban, err := b.Flags.BanUser(t.Context(), "", user, d, "", operator)
	if err != nil {
		t.Fatalf("BanUser(%q): %v", user, err)
	}
	return ban
}

// flag makes attempts on lock until user is flagged.
func flag(t *testing.T, b AbuseBackend, lock, user string) {
	t.Helper()
	for i := 0; i < b.MaxAttempts; i++ {
		mustAttempt(t, b, lock, user, ttl)
	}
}

// listAll pages through List and names each flag "lock/user".
func listAll(t *testing.T, b AbuseBackend, q leasegate.FlagQuery) (names []string, pages int) {
	t.Helper()
	for {
		p, err := b.Flags.List(t.Context(), "", q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		pages++
		for _, f := range p.Items {
			names = append(names, f.Lock+"/"+f.UserID)
		}
		if p.NextCursor == "" {
			return names, pages
		}
		if pages > 10 {
			t.Fatalf("paging does not end: %v", names)
		}
		q.Cursor = p.NextCursor
	}
}

func sameFlag(a, b leasegate.Flag) bool {
	return a.UserID == b.UserID && a.Lock == b.Lock && a.TimesFlagged == b.TimesFlagged &&
		a.PeakAttempts == b.PeakAttempts && a.FirstFlaggedAt.Equal(b.FirstFlaggedAt) &&
		a.LastFlaggedAt.Equal(b.LastFlaggedAt) && a.BannedUntil.Equal(b.BannedUntil)
}
