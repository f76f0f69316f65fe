package redislock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// TestLeasesWrittenByEarlierScriptsAreReadAsTheyWere writes a lease and a
// fence key exactly as the scripts before the lean rewrite left them (a
// four-field hash with PEXPIREAT, a string token with PXAT) and checks that
// today's scripts, in either layout, read, renew, release and re-grant it
// correctly. (layout_test.go runs the earlier scripts themselves against
// today's.)
func TestLeasesWrittenByEarlierScriptsAreReadAsTheyWere(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *engine, layout redislock.Layout) {
		ctx := context.Background()
		l := redislock.New(e.RDB, redislock.Options{Prefix: uniquePrefix(t), Layout: layout})
		lock, fence := l.Keys("r")
		now := redisNow(t, e.RDB)
		exp := now.Add(time.Minute).UnixMilli()
		// A token far above the clock: the next one must still exceed it.
		old := now.UnixMicro() + 1_000_000_000_000
		oldTok := strconv.FormatInt(old, 10)
		if err := e.RDB.HSet(ctx, lock, "owner", "old-owner", "token", oldTok,
			"acquired_at", strconv.FormatInt(now.UnixMilli(), 10), "expires_at", strconv.FormatInt(exp, 10)).Err(); err != nil {
			t.Fatal(err)
		}
		e.RDB.PExpireAt(ctx, lock, time.UnixMilli(exp))
		e.RDB.Set(ctx, fence, oldTok, 0)

		st, err := l.Status(ctx, "r")
		if err != nil || st.Owner != "old-owner" || st.Token != old || st.ExpiresAt.UnixMilli() != exp {
			t.Fatalf("Status: got %+v, %v, want the old lease", st, err)
		}
		if r, err := l.Acquire(ctx, "r", "new-owner", ttl); err != nil || r.Acquired || r.Lock.Owner != "old-owner" {
			t.Fatalf("Acquire by another owner: got %+v, %v, want contended by old-owner", r, err)
		}
		if lk, err := l.Renew(ctx, "r", "old-owner", old, ttl); err != nil || lk.Token != old {
			t.Fatalf("Renew: got %+v, %v, want the old token kept", lk, err)
		}
		if got, err := l.Release(ctx, "r", "old-owner", old); err != nil || got != leasegate.Released {
			t.Fatalf("Release: got %v, %v, want released", got, err)
		}
		r, err := l.Acquire(ctx, "r", "new-owner", ttl)
		if err != nil || !r.Acquired || r.Lock.Token != old+1 {
			t.Fatalf("Acquire after the old lease: got %+v, %v, want granted with token %d", r, err, old+1)
		}
		if n := e.RDB.HLen(ctx, lock).Val(); n != 4 {
			t.Errorf("got %d fields in the new lease, want 4", n)
		}
		// Two keys: the fence key has the new token. One key: the hash is
		// the fence, and the old fence key is left to run out.
		want := old + 1
		if layout == redislock.LayoutOneKey {
			want = old
		}
		if got := e.RDB.Get(ctx, fence).Val(); got != strconv.FormatInt(want, 10) {
			t.Errorf("got fence key %s, want %d", got, want)
		}
		if got := e.RDB.HGet(ctx, lock, "token").Val(); got != strconv.FormatInt(old+1, 10) {
			t.Errorf("got the hash's token %s, want %d", got, old+1)
		}
	})
}
