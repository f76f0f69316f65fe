package abuse

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestAttemptPortsThePHPLockClass(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, _ := newService(t, b, policies(5))
		// Long enough that a loaded machine stays inside one window, short
		// enough to wait out on a real server.
		const ttl = time.Second

		t.Run("attempts count 1..N, only the first acquires, the fifth flags", func(t *testing.T) {
			var first leasegate.UserLockResult
			for i := int64(1); i <= 7; i++ {
				res, err := svc.Attempt(ctx, "", "login", "u-count", ttl, leasegate.RequestMeta{})
				if err != nil {
					t.Fatalf("attempt %d: %v", i, err)
				}
				if i == 1 {
					first = res
				}
				if res.Attempts != i {
					t.Errorf("attempt %d: got attempts %d, want %d", i, res.Attempts, i)
				}
				if got, want := res.Acquired, i == 1; got != want {
					t.Errorf("attempt %d: got acquired %v, want %v", i, got, want)
				}
				if got, want := res.Flagged, i >= 5; got != want {
					t.Errorf("attempt %d: got flagged %v, want %v", i, got, want)
				}
				if got, want := res.FlaggedNow, i == 5; got != want {
					t.Errorf("attempt %d: got flagged_now %v, want %v", i, got, want)
				}
				if !res.ExpiresAt.Equal(first.ExpiresAt) {
					t.Errorf("attempt %d: got expires_at %v, want the window's %v", i, res.ExpiresAt, first.ExpiresAt)
				}
			}
			if got := first.ExpiresAt.Sub(first.WindowStart); got != ttl {
				t.Errorf("got window %v, want the ttl %v", got, ttl)
			}
		})

		t.Run("the counter resets when the window has passed", func(t *testing.T) {
			for i := 0; i < 3; i++ {
				if _, err := svc.Attempt(ctx, "", "login", "u-ttl", ttl, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			b.Advance(t, ttl+100*time.Millisecond)
			res, err := svc.Attempt(ctx, "", "login", "u-ttl", ttl, leasegate.RequestMeta{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Acquired || res.Attempts != 1 {
				t.Errorf("got acquired=%v attempts=%d after the window, want true and 1", res.Acquired, res.Attempts)
			}
		})

		t.Run("clear releases the user lock and the next attempt acquires", func(t *testing.T) {
			for i := 0; i < 2; i++ {
				if _, err := svc.Attempt(ctx, "", "login", "u-clear", time.Minute, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			if err := svc.Clear(ctx, "", "login", "u-clear"); err != nil {
				t.Fatalf("clear: got %v, want nil", err)
			}
			res, err := svc.Attempt(ctx, "", "login", "u-clear", time.Minute, leasegate.RequestMeta{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Acquired || res.Attempts != 1 {
				t.Errorf("got acquired=%v attempts=%d after clear, want true and 1", res.Acquired, res.Attempts)
			}
		})

		t.Run("clearing a lock nobody holds is not found", func(t *testing.T) {
			if err := svc.Clear(ctx, "", "login", "u-nobody"); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v, want ErrNotFound", err)
			}
		})

		t.Run("each lock name counts apart", func(t *testing.T) {
			a, _ := svc.Attempt(ctx, "", "lock-a", "u-apart", time.Minute, leasegate.RequestMeta{})
			bb, _ := svc.Attempt(ctx, "", "lock-b", "u-apart", time.Minute, leasegate.RequestMeta{})
			if !a.Acquired || !bb.Acquired {
				t.Errorf("got acquired %v and %v, want both true", a.Acquired, bb.Acquired)
			}
		})
	})
}

func TestCounterAlwaysHasATTL(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		// With a rolling span (shorter than the windows here) the counter
		// holds the span too: the same repairs, the same expiry.
		for _, roll := range []time.Duration{0, 20 * time.Second} {
			t.Run(fmt.Sprintf("rolling %v", roll), func(t *testing.T) {
				pol := policies(3)
				pol.Default.Rolling = roll
				svc := New(b.RDB, Options{Prefix: fmt.Sprintf("lgtest:ttl%d:", roll), Policies: pol, Log: zap.NewNop()})
				key := svc.keys.User("", "u-pttl").Counter("login")

				t.Run("every attempt leaves the counter with an expiry", func(t *testing.T) {
					for i := 1; i <= 6; i++ {
						if _, err := svc.Attempt(ctx, "", "login", "u-pttl", time.Minute, leasegate.RequestMeta{}); err != nil {
							t.Fatal(err)
						}
						pttl, err := b.RDB.PTTL(ctx, key).Result()
						if err != nil {
							t.Fatal(err)
						}
						if pttl <= 0 || pttl > time.Minute {
							t.Fatalf("after attempt %d: got PTTL %v, want in (0, 1m]", i, pttl)
						}
					}
				})

				t.Run("a counter left without expiry is repaired and keeps its count", func(t *testing.T) {
					k := svc.keys.User("", "u-stuck").Counter("login")
					if err := b.RDB.HSet(ctx, k, "n", "4").Err(); err != nil {
						t.Fatal(err)
					}
					res, err := svc.Attempt(ctx, "", "login", "u-stuck", 30*time.Second, leasegate.RequestMeta{})
					if err != nil {
						t.Fatal(err)
					}
					if res.Attempts != 5 || res.Acquired {
						t.Errorf("got attempts=%d acquired=%v, want 5 and false", res.Attempts, res.Acquired)
					}
					pttl, _ := b.RDB.PTTL(ctx, k).Result()
					if pttl <= 0 || pttl > 30*time.Second {
						t.Errorf("got PTTL %v, want in (0, 30s]", pttl)
					}
				})

				t.Run("a PHP-style INCR counter without expiry is converted and repaired", func(t *testing.T) {
					k := svc.keys.User("", "u-php").Counter("login")
					if err := b.RDB.Set(ctx, k, "2", 0).Err(); err != nil {
						t.Fatal(err)
					}
					res, err := svc.Attempt(ctx, "", "login", "u-php", 30*time.Second, leasegate.RequestMeta{})
					if err != nil {
						t.Fatal(err)
					}
					if res.Attempts != 3 {
						t.Errorf("got attempts %d, want 3 (the PHP count carried over)", res.Attempts)
					}
					pttl, _ := b.RDB.PTTL(ctx, k).Result()
					if pttl <= 0 {
						t.Errorf("got PTTL %v, want > 0", pttl)
					}
					if b.Mini == nil {
						return // a real 30 s wait is not worth it; the TTL above is the proof
					}
					b.Advance(t, 30*time.Second+100*time.Millisecond)
					res, err = svc.Attempt(ctx, "", "login", "u-php", 30*time.Second, leasegate.RequestMeta{})
					if err != nil {
						t.Fatal(err)
					}
					if !res.Acquired {
						t.Errorf("got acquired false after the repaired window, want true: the user is not locked out")
					}
				})
			})
		}
	})
}

func TestConcurrentAttemptsCountExactlyOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, lb := newService(t, b, policies(5))
		const n = 200
		results := make([]leasegate.UserLockResult, n)
		errs := make([]error, n)
		redistest.Burst(n, func(i int) {
			results[i], errs[i] = svc.Attempt(ctx, "", "burst", "u-burst", time.Minute,
				leasegate.RequestMeta{ClientIP: "192.0.2.7", RequestID: fmt.Sprintf("r%d", i)})
		})
		seen := make([]int, n+1)
		acquired, flaggedNow := 0, 0
		for i := range results {
			if errs[i] != nil {
				t.Fatalf("attempt %d: %v", i, errs[i])
			}
			a := results[i].Attempts
			if a < 1 || a > n {
				t.Fatalf("got attempts %d, want 1..%d", a, n)
			}
			seen[a]++
			if results[i].Acquired {
				acquired++
			}
			if results[i].FlaggedNow {
				flaggedNow++
			}
		}
		for a := 1; a <= n; a++ {
			if seen[a] != 1 {
				t.Errorf("attempt number %d seen %d times, want once", a, seen[a])
			}
		}
		if acquired != 1 {
			t.Errorf("got %d acquired, want exactly 1", acquired)
		}
		if flaggedNow != 1 {
			t.Errorf("got %d flagging attempts, want exactly 1", flaggedNow)
		}
		recs := lb.Events(t, "flagged")
		if len(recs) != 1 {
			t.Fatalf("got %d abuse-log records, want exactly 1", len(recs))
		}
		r := recs[0]
		if r["user_id"] != "u-burst" || r["lock"] != "burst" || r["attempts"] != float64(5) || r["client_ip"] != "192.0.2.7" {
			t.Errorf("got record %v, want user u-burst, lock burst, attempts 5, client_ip 192.0.2.7", r)
		}
		for _, f := range []string{"window_start", "window_end", "request_id", "tenant"} {
			if _, ok := r[f]; !ok {
				t.Errorf("record has no %s: %v", f, r)
			}
		}
		f, err := svc.Get(ctx, "", "u-burst")
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Flags) != 1 || f.Flags[0].TimesFlagged != 1 || f.Flags[0].PeakAttempts != n {
			t.Errorf("got flags %+v, want one flag, times 1, peak %d", f.Flags, n)
		}
	})
}

func TestAbuseLogKeepsHostileUserIDsInOneRecord(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, lb := newService(t, b, policies(1))
		ids := []string{
			"evil\n{\"event\":\"flagged\",\"user_id\":\"admin\"}",
			`quote"d\user`,
			"\x1b[31mred\x1b[0m\r\x00",
			"}{t=;r=user:admin}",
		}
		for _, id := range ids {
			if _, err := svc.Attempt(ctx, "", "login", id, time.Minute, leasegate.RequestMeta{}); err != nil {
				t.Fatal(err)
			}
		}
		recs := lb.Events(t, "flagged")
		if len(recs) != len(ids) {
			t.Fatalf("got %d records, want %d (one per user, each one JSON line)", len(recs), len(ids))
		}
		for i, id := range ids {
			if recs[i]["user_id"] != id {
				t.Errorf("record %d: got user_id %q, want %q", i, recs[i]["user_id"], id)
			}
		}
		all := lb.Records(t)
		if len(all) != len(ids) {
			t.Errorf("got %d log lines, want %d: a user id broke a line", len(all), len(ids))
		}
	})
}

func TestBans(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		pol := policies(2)
		pol.Locks["login"] = Policy{MaxAttempts: 2, BanAfterFlags: 2, BanFor: 10 * time.Second}
		pol.Locks["shadowed"] = Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: 10 * time.Second, Shadow: true}
		pol.Allowlist["vip"] = true
		svc, lb := newService(t, b, pol)
		const ttl = time.Second

		attempt := func(t *testing.T, lock, user string) (leasegate.UserLockResult, error) {
			t.Helper()
			return svc.Attempt(ctx, "", lock, user, ttl, leasegate.RequestMeta{})
		}

		t.Run("the second flagged window bans by policy and banned attempts are not counted", func(t *testing.T) {
			for i := 0; i < 2; i++ {
				if _, err := attempt(t, "login", "u-ban"); err != nil {
					t.Fatal(err)
				}
			}
			b.Advance(t, ttl+100*time.Millisecond)
			if _, err := attempt(t, "login", "u-ban"); err != nil {
				t.Fatal(err)
			}
			res, err := attempt(t, "login", "u-ban")
			if err != nil {
				t.Fatal(err)
			}
			if !res.FlaggedNow || res.BannedUntil.IsZero() {
				t.Fatalf("got flagged_now=%v banned_until=%v, want a flag and a policy ban", res.FlaggedNow, res.BannedUntil)
			}
			_, err = attempt(t, "other-lock", "u-ban")
			var be *leasegate.BannedError
			if !errors.Is(err, leasegate.ErrBanned) || !errors.As(err, &be) {
				t.Fatalf("got %v, want ErrBanned on every lock of the user", err)
			}
			if be.Remaining <= 9*time.Second || be.Remaining > 10*time.Second {
				t.Errorf("got remaining %v, want about 10s", be.Remaining)
			}
			if err := svc.Unban(ctx, "", "u-ban", leasegate.RequestMeta{Operator: "alice"}); err != nil {
				t.Fatalf("unban: %v", err)
			}
			res, err = attempt(t, "other-lock", "u-ban")
			if err != nil {
				t.Fatal(err)
			}
			if !res.Acquired {
				t.Errorf("got acquired false: the banned attempt was counted, want it not counted")
			}
			if got := lb.Events(t, "unbanned"); len(got) != 1 || got[0]["operator"] != "alice" {
				t.Errorf("got unban audit %v, want one naming alice", got)
			}
		})

		t.Run("an operator ban refuses attempts until unbanned", func(t *testing.T) {
			ban, err := svc.BanUser(ctx, "", "u-op", time.Hour, "spam", leasegate.RequestMeta{Operator: "bob"})
			if err != nil {
				t.Fatal(err)
			}
			if d := ban.Until.Sub(ban.Created); d != time.Hour {
				t.Errorf("got ban length %v, want 1h", d)
			}
			if _, err := attempt(t, "login", "u-op"); !errors.Is(err, leasegate.ErrBanned) {
				t.Errorf("got %v, want ErrBanned", err)
			}
			uf, err := svc.Get(ctx, "", "u-op")
			if err != nil || uf.Ban == nil || uf.Ban.Reason != "spam" || uf.Ban.By != "bob" {
				t.Errorf("got %+v, %v, want the ban by bob for spam", uf, err)
			}
			if got := lb.Events(t, "banned"); len(got) != 1 || got[0]["operator"] != "bob" {
				t.Errorf("got ban audit %v, want one naming bob", got)
			}
		})

		t.Run("unban without a ban is not found", func(t *testing.T) {
			if err := svc.Unban(ctx, "", "u-none", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v, want ErrNotFound", err)
			}
		})

		t.Run("a shadow lock flags but neither bans nor refuses", func(t *testing.T) {
			for i := 0; i < 2; i++ {
				res, err := attempt(t, "shadowed", "u-shadow")
				if err != nil {
					t.Fatal(err)
				}
				if i == 1 && (!res.FlaggedNow || !res.BannedUntil.IsZero()) {
					t.Errorf("got flagged_now=%v banned_until=%v, want flagged, not banned", res.FlaggedNow, res.BannedUntil)
				}
			}
			if _, err := svc.BanUser(ctx, "", "u-shadow", time.Hour, "", leasegate.RequestMeta{}); err != nil {
				t.Fatal(err)
			}
			if _, err := attempt(t, "shadowed", "u-shadow"); err != nil {
				t.Errorf("got %v on a shadow lock, want the attempt counted", err)
			}
		})

		t.Run("allowlisted users are never flagged or banned", func(t *testing.T) {
			for i := 0; i < 4; i++ {
				res, err := attempt(t, "login", "vip")
				if err != nil {
					t.Fatal(err)
				}
				if res.Flagged || res.FlaggedNow {
					t.Errorf("attempt %d: got flagged, want never", i+1)
				}
			}
			if _, err := svc.Get(ctx, "", "vip"); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v, want no flags for vip", err)
			}
			if _, err := svc.BanUser(ctx, "", "vip", time.Hour, "", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrAllowlisted) {
				t.Errorf("got %v, want ErrAllowlisted", err)
			}
		})
	})
}

func TestFlaggedRegistry(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, lb := newService(t, b, policies(2))
		const ttl = time.Second
		flag := func(t *testing.T, tenant, lock, user string) {
			t.Helper()
			for i := 0; i < 2; i++ {
				if _, err := svc.Attempt(ctx, tenant, lock, user, ttl, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
		}

		t.Run("a cleared user does not come back unless flagged again", func(t *testing.T) {
			flag(t, "t-clear", "login", "u1")
			if err := svc.ClearFlags(ctx, "t-clear", "u1", leasegate.RequestMeta{Operator: "carol"}); err != nil {
				t.Fatalf("clear flags: %v", err)
			}
			// More attempts in the same, already flagged, window.
			for i := 0; i < 3; i++ {
				if _, err := svc.Attempt(ctx, "t-clear", "login", "u1", ttl, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := svc.Get(ctx, "t-clear", "u1"); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v after clear, want ErrNotFound", err)
			}
			p, err := svc.List(ctx, "t-clear", leasegate.FlagQuery{})
			if err != nil || len(p.Items) != 0 {
				t.Errorf("got %+v, %v, want an empty list", p, err)
			}
			if err := svc.ClearFlags(ctx, "t-clear", "u1", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("second clear: got %v, want ErrNotFound", err)
			}
			if got := lb.Events(t, "flags_cleared"); len(got) != 1 || got[0]["operator"] != "carol" {
				t.Errorf("got clear audit %v, want one naming carol", got)
			}
			b.Advance(t, ttl+100*time.Millisecond)
			flag(t, "t-clear", "login", "u1")
			uf, err := svc.Get(ctx, "t-clear", "u1")
			if err != nil || len(uf.Flags) != 1 || uf.Flags[0].TimesFlagged != 1 {
				t.Errorf("got %+v, %v, want one fresh flag after flagging again", uf, err)
			}
		})

		t.Run("listing pages newest first with a cursor and filters by lock", func(t *testing.T) {
			const tenant = "t-page"
			var want []string
			for i := 0; i < 7; i++ {
				lock := "lock-a"
				if i%2 == 1 {
					lock = "lock-b"
				}
				user := fmt.Sprintf("user-%d", i)
				flag(t, tenant, lock, user)
				want = append([]string{lock + "/" + user}, want...)
				b.Advance(t, 2*time.Millisecond)
			}
			var got []string
			cursor := ""
			pages := 0
			for {
				p, err := svc.List(ctx, tenant, leasegate.FlagQuery{Limit: 3, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				pages++
				for _, f := range p.Items {
					got = append(got, f.Lock+"/"+f.UserID)
				}
				if p.NextCursor == "" {
					break
				}
				cursor = p.NextCursor
				if pages > 10 {
					t.Fatal("paging does not end")
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("got %v, want %v", got, want)
			}
			if pages != 3 {
				t.Errorf("got %d pages of 3, want 3", pages)
			}
			p, err := svc.List(ctx, tenant, leasegate.FlagQuery{Lock: "lock-b"})
			if err != nil {
				t.Fatal(err)
			}
			var locks []string
			for _, f := range p.Items {
				locks = append(locks, f.Lock+"/"+f.UserID)
			}
			if strings.Join(locks, ",") != "lock-b/user-5,lock-b/user-3,lock-b/user-1" {
				t.Errorf("got %v, want the three lock-b flags newest first", locks)
			}
		})

		t.Run("a bad cursor is refused", func(t *testing.T) {
			for _, c := range []string{"!!", "bm9wZQ", "MTIzCg"} {
				if _, err := svc.List(ctx, "", leasegate.FlagQuery{Cursor: c}); !errors.Is(err, leasegate.ErrBadCursor) {
					t.Errorf("cursor %q: got %v, want ErrBadCursor", c, err)
				}
			}
		})

		t.Run("tenants never see each other's counters or flags", func(t *testing.T) {
			flag(t, "tenant-1", "login", "same-user")
			res, err := svc.Attempt(ctx, "tenant-2", "login", "same-user", ttl, leasegate.RequestMeta{})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Acquired || res.Attempts != 1 {
				t.Errorf("got attempts %d in tenant-2, want 1 (its own counter)", res.Attempts)
			}
			if _, err := svc.Get(ctx, "tenant-2", "same-user"); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v, want tenant-1's flag invisible to tenant-2", err)
			}
			if p, _ := svc.List(ctx, "tenant-2", leasegate.FlagQuery{}); len(p.Items) != 0 {
				t.Errorf("got %d items in tenant-2's list, want 0", len(p.Items))
			}
			if err := svc.ClearFlags(ctx, "tenant-2", "same-user", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrUserNotFound) {
				t.Errorf("got %v, want tenant-2 unable to clear tenant-1's flag", err)
			}
			if _, err := svc.Get(ctx, "tenant-1", "same-user"); err != nil {
				t.Errorf("got %v, want tenant-1's flag intact", err)
			}
		})
	})
}

// Ties need a frozen clock, so this runs on miniredis only.
func TestListBreaksTiesWithoutRepeatsOrGaps(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	ctx := context.Background()
	svc, _ := newService(t, b, policies(1))
	var want []string
	for i := 0; i < 5; i++ {
		u := fmt.Sprintf("tie-%d", i)
		if _, err := svc.Attempt(ctx, "", "login", u, time.Minute, leasegate.RequestMeta{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, u)
	}
	var got []string
	cursor := ""
	for i := 0; i < 10; i++ {
		p, err := svc.List(ctx, "", leasegate.FlagQuery{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.Items {
			got = append(got, f.UserID)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	sort.Strings(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %v, want each of %v once", got, want)
	}
}

// The outage is simulated with miniredis SetError.
func TestRedisFailureNeverAcquires(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	svc, _ := newService(t, b, policies(5))
	b.Mini.SetError("LOADING redis is loading")
	defer b.Mini.SetError("")
	res, err := svc.Attempt(context.Background(), "", "login", "u", time.Minute, leasegate.RequestMeta{})
	if !errors.Is(err, leasegate.ErrUnavailable) || res.Acquired {
		t.Errorf("got %+v, %v, want ErrUnavailable and not acquired", res, err)
	}
}
