package abuse

import (
	"context"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The flag fires for the first attempt at or above max_attempts in a
// window, not only for the attempt whose count equals it: a counter
// carried over from the PHP class above the threshold, or a threshold
// lowered by a policy change mid-window, must still flag, once.
func TestFlagFiresAtOrAboveTheThresholdOncePerWindow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()

		// attempts makes n attempts of user on lock "login" with svc and
		// returns their results.
		attempts := func(t *testing.T, svc *Service, user string, n int) []leasegate.UserLockResult {
			t.Helper()
			out := make([]leasegate.UserLockResult, n)
			for i := range out {
				res, err := svc.Attempt(ctx, "", "login", user, time.Minute, leasegate.RequestMeta{})
				if err != nil {
					t.Fatalf("attempt %d: %v", i+1, err)
				}
				out[i] = res
			}
			return out
		}
		// flaggedOnce checks that exactly the first result flagged now,
		// that one abuse-log record and one flag record (times 1) exist.
		flaggedOnce := func(t *testing.T, svc *Service, lb *logtest.Buffer, user string, got []leasegate.UserLockResult, firstAttempt int64) {
			t.Helper()
			for i, res := range got {
				want := i == 0
				if res.FlaggedNow != want {
					t.Errorf("attempt %d (count %d): got flagged_now %v, want %v", i+1, res.Attempts, res.FlaggedNow, want)
				}
				if !res.Flagged {
					t.Errorf("attempt %d (count %d): got flagged false, want true (at or above the threshold)", i+1, res.Attempts)
				}
			}
			if got[0].Attempts != firstAttempt {
				t.Errorf("got first count %d, want %d", got[0].Attempts, firstAttempt)
			}
			var mine []map[string]any
			for _, r := range lb.Events(t, "flagged") {
				if r["user_id"] == user {
					mine = append(mine, r)
				}
			}
			if len(mine) != 1 {
				t.Fatalf("got %d abuse-log records for %s, want exactly 1", len(mine), user)
			}
			if mine[0]["attempts"] != float64(firstAttempt) {
				t.Errorf("got record attempts %v, want %d", mine[0]["attempts"], firstAttempt)
			}
			f, err := svc.Get(ctx, "", user)
			if err != nil {
				t.Fatalf("flag record: %v", err)
			}
			if len(f.Flags) != 1 || f.Flags[0].TimesFlagged != 1 {
				t.Errorf("got flags %+v, want one flag record flagged once", f.Flags)
			}
		}

		t.Run("a PHP counter above the threshold without a TTL flags at the next attempt", func(t *testing.T) {
			svc, lb := newService(t, b, policies(5))
			const user = "u-php-above"
			if err := b.RDB.Set(ctx, svc.keys.User("", user).Counter("login"), "7", 0).Err(); err != nil {
				t.Fatal(err)
			}
			flaggedOnce(t, svc, lb, user, attempts(t, svc, user, 3), 8)
		})

		t.Run("a PHP counter above the threshold with a TTL flags at the next attempt", func(t *testing.T) {
			svc, lb := newService(t, b, policies(5))
			const user = "u-php-above-ttl"
			if err := b.RDB.Set(ctx, svc.keys.User("", user).Counter("login"), "12", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			flaggedOnce(t, svc, lb, user, attempts(t, svc, user, 3), 13)
		})

		t.Run("a counter above the threshold in our layout without a TTL flags at the next attempt", func(t *testing.T) {
			svc, lb := newService(t, b, policies(5))
			const user = "u-hash-above"
			if err := b.RDB.HSet(ctx, svc.keys.User("", user).Counter("login"), "n", "9").Err(); err != nil {
				t.Fatal(err)
			}
			flaggedOnce(t, svc, lb, user, attempts(t, svc, user, 3), 10)
		})

		t.Run("a threshold lowered mid-window flags at the next attempt", func(t *testing.T) {
			before, lb := newService(t, b, policies(5))
			const user = "u-lowered"
			for i, res := range attempts(t, before, user, 3) {
				if res.FlaggedNow || res.Flagged {
					t.Fatalf("attempt %d under max 5: got flagged, want not", i+1)
				}
			}
			// The policy changes (a redeploy with max 2): same Redis, same
			// log, the window goes on.
			after := New(b.RDB, Options{Prefix: "lgtest:", Policies: policies(2), Log: before.log})
			flaggedOnce(t, after, lb, user, attempts(t, after, user, 3), 4)
		})

		t.Run("a window flagged before the upgrade is not flagged again", func(t *testing.T) {
			// A window that an older gateway flagged at count == max has no
			// flagged mark on its counter; its flag record names the window.
			svc, lb := newService(t, b, policies(2))
			const user = "u-upgraded"
			attempts(t, svc, user, 2)
			if err := b.RDB.HDel(ctx, svc.keys.User("", user).Counter("login"), "flagged").Err(); err != nil {
				t.Fatal(err)
			}
			for i, res := range attempts(t, svc, user, 2) {
				if res.FlaggedNow {
					t.Errorf("attempt %d after the upgrade: got flagged_now, want the window flagged once", i+3)
				}
			}
			if n := len(lb.Events(t, "flagged")); n != 1 {
				t.Errorf("got %d abuse-log records, want 1", n)
			}
		})

		t.Run("the next window above a lowered threshold flags again, once", func(t *testing.T) {
			svc, lb := newService(t, b, policies(1))
			const user = "u-next-window"
			const ttl = time.Second
			for i := 0; i < 3; i++ {
				if _, err := svc.Attempt(ctx, "", "login", user, ttl, leasegate.RequestMeta{}); err != nil {
					t.Fatal(err)
				}
			}
			b.Advance(t, ttl+100*time.Millisecond)
			for i := 0; i < 3; i++ {
				res, err := svc.Attempt(ctx, "", "login", user, ttl, leasegate.RequestMeta{})
				if err != nil {
					t.Fatal(err)
				}
				if got, want := res.FlaggedNow, i == 0; got != want {
					t.Errorf("second window, attempt %d: got flagged_now %v, want %v", i+1, got, want)
				}
			}
			if n := len(lb.Events(t, "flagged")); n != 2 {
				t.Errorf("got %d abuse-log records, want 2 (one per window)", n)
			}
		})
	})
}
