package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/scripts"
)

// A gateway of the version before the one-key layout, for the mixed-fleet
// tests: the scripts of that version (main at 7420223), kept verbatim in
// testdata/v1 as fixtures (no gateway runs them; the copies are the
// point), called with that version's arguments.
type oldGateway struct {
	rdb                            *redis.Client
	locks                          *redislock.Locker // for the key names only
	acq, rel, renew, status, force *redis.Script
}

func newOldGateway(t *testing.T, rdb *redis.Client, l *redislock.Locker) *oldGateway {
	t.Helper()
	load := func(name string) *redis.Script {
		b, err := os.ReadFile("testdata/v1/" + name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		return redis.NewScript(string(b))
	}
	// status.lua is unchanged since that version: today's serves.
	return &oldGateway{rdb: rdb, locks: l, acq: load("acquire"), rel: load("release"),
		renew: load("renew"), status: scripts.Status, force: load("force_release")}
}

const retentionMS = int64(24 * time.Hour / time.Millisecond)

// acquire answers (granted, token, holder).
func (g *oldGateway) acquire(t *testing.T, resource, owner string, ttl time.Duration) (bool, int64, string) {
	t.Helper()
	lock, fence := g.locks.Keys(resource)
	v, err := g.acq.Run(context.Background(), g.rdb, []string{lock, fence}, owner, ttl.Milliseconds(), retentionMS).Slice()
	if err != nil || len(v) != 6 {
		t.Fatalf("old acquire: %v %v", v, err)
	}
	tok, _ := strconv.ParseInt(v[1].(string), 10, 64)
	return v[0].(int64) == 1, tok, v[4].(string)
}

func (g *oldGateway) release(t *testing.T, resource, owner string) int64 {
	t.Helper()
	lock, _ := g.locks.Keys(resource)
	n, err := g.rel.Run(context.Background(), g.rdb, []string{lock}, owner, "", "", "").Int64()
	if err != nil {
		t.Fatalf("old release: %v", err)
	}
	return n
}

// renewed answers the flag of the old renew.lua: 1, 0 or -1.
func (g *oldGateway) renewed(t *testing.T, resource, owner string, ttl time.Duration) int64 {
	t.Helper()
	lock, fence := g.locks.Keys(resource)
	v, err := g.renew.Run(context.Background(), g.rdb, []string{lock, fence}, owner, ttl.Milliseconds(), retentionMS, "").Slice()
	if err != nil {
		t.Fatalf("old renew: %v", err)
	}
	return v[0].(int64)
}

// holder answers the owner the old status.lua reads, "" for none.
func (g *oldGateway) holder(t *testing.T, resource string) string {
	t.Helper()
	lock, _ := g.locks.Keys(resource)
	v, err := g.status.Run(context.Background(), g.rdb, []string{lock}).Slice()
	if err != nil {
		t.Fatalf("old status: %v", err)
	}
	if v[0].(int64) == 0 {
		return ""
	}
	return v[4].(string)
}

func (g *oldGateway) forceRelease(t *testing.T, resource string) bool {
	t.Helper()
	lock, fence := g.locks.Keys(resource)
	v, err := g.force.Run(context.Background(), g.rdb, []string{lock, fence, lock + ":w", lock + ":f"},
		"", lock, retentionMS, "0", 60000).Slice()
	if err != nil {
		t.Fatalf("old force release: %v", err)
	}
	return v[0].(int64) == 1
}

var layouts = []struct {
	name   string
	layout redislock.Layout
}{{"two keys", redislock.LayoutTwoKeys}, {"one key", redislock.LayoutOneKey}}

// forEachLayout runs fn as a subtest per layout, each on every engine.
func forEachLayout(t *testing.T, fn func(t *testing.T, e *engine, layout redislock.Layout)) {
	t.Helper()
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			forEachEngine(t, func(t *testing.T, e *engine) { fn(t, e, lay.layout) })
		})
	}
}

// Mutual exclusion across versions, for both layouts of the new version:
// whichever gateway holds a lease, the other sees it held, refuses it to
// a third owner, and can read, renew and end it as its holder asks. With
// two keys the tokens rise too; with one key they need not
// (TestOneKeyLayoutIsNotSafeAlongsideOldGateways), here on miniredis's
// frozen clock.
func TestOldAndNewGatewaysNeverGrantALeaseTheOtherHolds(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *engine, layout redislock.Layout) {
		rises := func(tok, after int64) bool { return layout == redislock.LayoutOneKey || tok > after }
		ctx := context.Background()
		l := redislock.New(e.RDB, redislock.Options{Prefix: uniquePrefix(t), Layout: layout})
		old := newOldGateway(t, e.RDB, l)

		// New holds: old refuses, reads, renews and releases it.
		lk := mustAcquire(t, l, "r", "new-owner", ttl)
		if ok, _, who := old.acquire(t, "r", "old-owner", ttl); ok || who != "new-owner" {
			t.Fatalf("old acquire of a new lease: got granted %v to %q, want refused by new-owner", ok, who)
		}
		if who := old.holder(t, "r"); who != "new-owner" {
			t.Errorf("old status: got %q, want new-owner", who)
		}
		if f := old.renewed(t, "r", "new-owner", ttl); f != 1 {
			t.Errorf("old renew of a new lease: got %d, want 1", f)
		}
		if r, err := l.Acquire(ctx, "r", "other", ttl); err != nil || r.Acquired {
			t.Fatalf("new acquire after an old renew: got %+v, %v, want refused", r, err)
		}
		if n := old.release(t, "r", "new-owner"); n != 1 {
			t.Fatalf("old release of a new lease: got %d, want 1", n)
		}
		if _, err := l.Status(ctx, "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Fatalf("new status after an old release: got %v, want ErrLockNotHeld", err)
		}

		// Old holds: new refuses, reads, renews and releases it.
		ok, tok, _ := old.acquire(t, "r", "old-owner", ttl)
		if !ok || !rises(tok, lk.Token) {
			t.Fatalf("old acquire after release: got %v token %d, want granted above %d", ok, tok, lk.Token)
		}
		if r, err := l.Acquire(ctx, "r", "new-owner", ttl); err != nil || r.Acquired || r.Lock.Owner != "old-owner" || r.Lock.Token != tok {
			t.Fatalf("new acquire of an old lease: got %+v, %v, want refused by old-owner", r, err)
		}
		if _, err := l.Renew(ctx, "r", "old-owner", tok, ttl); err != nil {
			t.Fatalf("new renew of an old lease: %v", err)
		}
		if ok, _, _ := old.acquire(t, "r", "x", ttl); ok {
			t.Fatal("old acquire after a new renew: got granted, want refused")
		}
		mustRelease(t, l, "r", "old-owner")
		if who := old.holder(t, "r"); who != "" {
			t.Fatalf("old status after a new release (a tombstone): got %q, want none", who)
		}
		// A tombstone is a free resource to the old scripts.
		ok, tok2, _ := old.acquire(t, "r", "old-owner", ttl)
		if !ok || !rises(tok2, tok) {
			t.Fatalf("old acquire on a tombstone: got %v token %d, want granted above %d", ok, tok2, tok)
		}
		if !old.forceRelease(t, "r") {
			t.Fatal("old force release: got no lease")
		}
		lk3 := mustAcquire(t, l, "r", "new-owner", ttl)
		if !rises(lk3.Token, tok2) {
			t.Fatalf("new acquire after an old force release: got token %d, want above %d", lk3.Token, tok2)
		}
		if !old.forceRelease(t, "r") {
			t.Fatal("old force release of a new lease: got no lease")
		}
		if ok, tok4, _ := old.acquire(t, "r", "old-owner", ttl); !ok || !rises(tok4, lk3.Token) {
			t.Fatalf("old acquire after an old force release of a new lease: got %v token %d, want above %d", ok, tok4, lk3.Token)
		}
	})
}

// gateway is one side of a mixed fleet in the token test.
type gateway interface {
	acquire(t *testing.T, resource, owner string) (bool, int64)
	renew(t *testing.T, resource, owner string)
	release(t *testing.T, resource, owner string)
}

type oldSide struct{ *oldGateway }

func (g oldSide) acquire(t *testing.T, resource, owner string) (bool, int64) {
	ok, tok, _ := g.oldGateway.acquire(t, resource, owner, ttl)
	return ok, tok
}

func (g oldSide) renew(t *testing.T, resource, owner string) { g.renewed(t, resource, owner, ttl) }

func (g oldSide) release(t *testing.T, resource, owner string) {
	g.oldGateway.release(t, resource, owner)
}

type newSide struct{ *redislock.Locker }

func (g newSide) acquire(t *testing.T, resource, owner string) (bool, int64) {
	t.Helper()
	r, err := g.Acquire(context.Background(), resource, owner, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return r.Acquired, r.Lock.Token
}

func (g newSide) renew(t *testing.T, resource, owner string) {
	t.Helper()
	if _, err := g.Renew(context.Background(), resource, owner, 0, ttl); err != nil &&
		!errors.Is(err, leasegate.ErrLockNotHeld) && !errors.Is(err, leasegate.ErrLockForbidden) {
		t.Fatal(err)
	}
}

func (g newSide) release(t *testing.T, resource, owner string) {
	t.Helper()
	if _, err := g.Release(context.Background(), resource, owner, 0); err != nil {
		t.Fatal(err)
	}
}

// tokensRise runs a random mix of grants and releases on one resource by
// fleet's gateways while the Redis clock steps back now and then, and
// reports the first token that did not exceed every earlier one.
func tokensRise(t *testing.T, e *engine, fleet []gateway, seed uint64) error {
	t.Helper()
	rnd := rand.New(rand.NewPCG(seed, 1))
	clock := epoch
	var last int64
	for i := range 400 {
		switch rnd.IntN(6) {
		case 0:
			// The clock steps back by up to a second, or jumps a lease ahead.
			clock = clock.Add(-time.Duration(rnd.IntN(1_000_000)) * time.Microsecond)
		case 1:
			clock = clock.Add(ttl + time.Millisecond)
			e.Mini.FastForward(ttl + time.Millisecond)
		default:
			clock = clock.Add(time.Duration(rnd.IntN(3)) * time.Microsecond)
		}
		e.Mini.SetTime(clock)
		g := fleet[rnd.IntN(len(fleet))]
		owner := fmt.Sprintf("o%d", rnd.IntN(2))
		ok, tok := g.acquire(t, "r", owner)
		if ok && tok != last {
			if tok < last {
				return fmt.Errorf("step %d: got token %d after %d", i, tok, last)
			}
			last = tok
		}
		if rnd.IntN(3) == 0 {
			fleet[rnd.IntN(len(fleet))].renew(t, "r", owner)
		}
		if rnd.IntN(2) == 0 {
			fleet[rnd.IntN(len(fleet))].release(t, "r", owner)
		}
	}
	return nil
}

// Tokens rise strictly per resource across a fleet that mixes the old
// scripts with the new ones in the two-key layout (a rolling upgrade), and
// across new gateways of both layouts (the switch to one key), even when
// the Redis clock steps back. (A same-owner re-acquire keeps its token.)
func TestTokensRiseAcrossAMixedFleetWhileTheClockStepsBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fleet   func(e *engine, l2, l1 *redislock.Locker, old *oldGateway) []gateway
		wantErr bool
	}{
		{"old and new with two keys", func(_ *engine, l2, _ *redislock.Locker, old *oldGateway) []gateway {
			return []gateway{oldSide{old}, newSide{l2}}
		}, false},
		{"new with two keys and with one key", func(_ *engine, l2, l1 *redislock.Locker, _ *oldGateway) []gateway {
			return []gateway{newSide{l2}, newSide{l1}}
		}, false},
		{"new with one key only", func(_ *engine, _, l1 *redislock.Locker, _ *oldGateway) []gateway {
			return []gateway{newSide{l1}}
		}, false},
		// The check itself: it must catch the mix the docs rule out.
		{"old and new with one key (ruled out)", func(_ *engine, _, l1 *redislock.Locker, old *oldGateway) []gateway {
			return []gateway{oldSide{old}, newSide{l1}}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed := 0
			for seed := range uint64(8) {
				e := newMiniEngine(t)
				prefix := uniquePrefix(t)
				l2 := redislock.New(e.RDB, redislock.Options{Prefix: prefix})
				l1 := redislock.New(e.RDB, redislock.Options{Prefix: prefix, Layout: redislock.LayoutOneKey})
				err := tokensRise(t, e, tc.fleet(e, l2, l1, newOldGateway(t, e.RDB, l2)), seed)
				if err != nil && !tc.wantErr {
					t.Fatalf("seed %d: %v", seed, err)
				}
				if err != nil {
					failed++
				}
			}
			if tc.wantErr && failed == 0 {
				t.Errorf("got no falling token in 8 runs, want the check to catch this mix")
			}
		})
	}
}

// This pins why the one-key layout waits for the last old gateway
// (docs/keys.md): an old acquire derives a free resource's token from the
// fence key alone, which the one-key layout no longer writes, so after a
// clock step back it can hand out a token below the last one.
func TestOneKeyLayoutIsNotSafeAlongsideOldGateways(t *testing.T) {
	e := newMiniEngine(t)
	l1 := newLocker(t, e.RDB, redislock.Options{Layout: redislock.LayoutOneKey})
	old := newOldGateway(t, e.RDB, l1)
	first := mustAcquire(t, l1, "r", "new-owner", ttl)
	mustRelease(t, l1, "r", "new-owner")
	e.Mini.SetTime(epoch.Add(-time.Second))
	ok, tok, _ := old.acquire(t, "r", "old-owner", ttl)
	if !ok || tok >= first.Token {
		t.Errorf("got granted %v token %d, want granted below %d: if old gateways now see the one-key fence, update docs/keys.md", ok, tok, first.Token)
	}
}

// The one-key layout keeps one key per resource: the lease hash, which
// outlives the lease by the retention as a tombstone holding the token.
func TestOneKeyLayoutKeepsOneKeyThatIsAlsoTheFence(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := redislock.New(e.RDB, redislock.Options{Prefix: prefix, Layout: redislock.LayoutOneKey,
			FenceRetention: time.Hour, Index: redislock.IndexOff})
		lock, _ := l.Keys("r")
		first := mustAcquire(t, l, "r", "a", ttl)
		keys := func() []string {
			k, err := e.RDB.Keys(ctx, prefix+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		if k := keys(); len(k) != 1 || k[0] != lock {
			t.Fatalf("got keys %q while held, want only %q", k, lock)
		}
		if d := e.RDB.PTTL(ctx, lock).Val(); d <= time.Hour || d > time.Hour+ttl {
			t.Errorf("got lock key PTTL %v, want the lease's ttl + 1h", d)
		}
		if _, err := l.Renew(ctx, "r", "a", 0, 2*ttl); err != nil {
			t.Fatal(err)
		}
		if d := e.RDB.PTTL(ctx, lock).Val(); d <= time.Hour+ttl {
			t.Errorf("got lock key PTTL %v after a renew to 2×ttl, want above ttl + 1h", d)
		}
		mustRelease(t, l, "r", "a")
		if k := keys(); len(k) != 1 {
			t.Fatalf("got keys %q after the release, want the tombstone only", k)
		}
		if m := e.RDB.HGetAll(ctx, lock).Val(); len(m) != 1 || m["token"] != strconv.FormatInt(first.Token, 10) {
			t.Errorf("got tombstone %v, want only token %d", m, first.Token)
		}
		if d := e.RDB.PTTL(ctx, lock).Val(); d <= time.Hour {
			t.Errorf("got tombstone PTTL %v, want above the retention", d)
		}
		if _, err := l.Status(ctx, "r"); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("Status of a tombstone: got %v, want ErrLockNotHeld", err)
		}
		if _, err := l.Renew(ctx, "r", "a", 0, ttl); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("Renew of a tombstone: got %v, want ErrLockNotHeld", err)
		}
		if got, err := l.Release(ctx, "r", "a", 0); err != nil || got != leasegate.NotFound {
			t.Errorf("Release of a tombstone: got %v, %v, want NotFound", got, err)
		}
		if tok := mustAcquire(t, l, "r", "b", ttl).Token; tok <= first.Token {
			t.Errorf("got token %d on a tombstone, want above %d", tok, first.Token)
		}
		if k := keys(); len(k) != 1 {
			t.Errorf("got keys %q after a second grant, want one", k)
		}
	})
}

// A legacy fence key (what the two-key layout and every older version
// leave once a lease's hash is gone) can hold a token above the clock;
// the one-key layout reads it when the hash has no token, and only then.
func TestOneKeyLayoutReadsALegacyFenceKey(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := redislock.New(e.RDB, redislock.Options{Prefix: prefix, Layout: redislock.LayoutOneKey})
		lock, fence := l.Keys("r")
		high := redisNow(t, e.RDB).UnixMicro() + 1_000_000_000_000
		if err := e.RDB.Set(ctx, fence, high, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		lk := mustAcquire(t, l, "r", "a", ttl)
		if lk.Token != high+1 {
			t.Fatalf("got token %d, want %d above the legacy fence key", lk.Token, high+1)
		}
		if got := e.RDB.Get(ctx, fence).Val(); got != strconv.FormatInt(high, 10) {
			t.Errorf("got fence key %q, want it left as it was (%d)", got, high)
		}
		mustRelease(t, l, "r", "a")
		if tok := mustAcquire(t, l, "r", "b", ttl).Token; tok != high+2 {
			t.Errorf("got token %d on the tombstone, want %d", tok, high+2)
		}
		if !strings.HasSuffix(lock, ":lock") {
			t.Errorf("got lock key %q", lock)
		}
	})
}

// A forced release burns the token for at least the retention in both
// layouts: in the tombstone that lives that long already (one key), or in
// the fence key (two keys, whose hash lives only to expires_at).
func TestForcedReleaseKeepsTheBurntTokenForTheRetention(t *testing.T) {
	forEachLayout(t, func(t *testing.T, e *engine, layout redislock.Layout) {
		ctx := context.Background()
		l := redislock.New(e.RDB, redislock.Options{Prefix: uniquePrefix(t), Layout: layout, FenceRetention: time.Hour})
		o := redislock.NewOperator(e.RDB, l, nil, redislock.OperatorOptions{})
		lk := mustAcquire(t, l, "r", "a", ttl)
		if _, err := o.ForceRelease(ctx, "", "r", "test", leasegate.RequestMeta{}); err != nil {
			t.Fatal(err)
		}
		lock, fence := l.Keys("r")
		tomb := e.RDB.HGetAll(ctx, lock).Val()
		if len(tomb) != 1 || tomb["token"] != strconv.FormatInt(lk.Token, 10) {
			t.Errorf("got lock hash %v, want a tombstone with token %d", tomb, lk.Token)
		}
		holder, keeper := lock, fence
		if layout == redislock.LayoutTwoKeys {
			holder, keeper = fence, lock
		}
		if got := e.RDB.PTTL(ctx, holder).Val(); got < time.Hour-time.Minute {
			t.Errorf("got PTTL %v of %s, want at least the retention", got, holder)
		}
		if layout == redislock.LayoutOneKey {
			if n := e.RDB.Exists(ctx, fence).Val(); n != 0 {
				t.Errorf("got a fence key with one key, want none")
			}
		} else if got := e.RDB.PTTL(ctx, keeper).Val(); got > ttl {
			t.Errorf("got tombstone PTTL %v with two keys, want at most the lease's", got)
		}
		if next := mustAcquire(t, l, "r", "b", ttl); next.Token <= lk.Token {
			t.Errorf("got token %d after the forced release, want above %d", next.Token, lk.Token)
		}
	})
}

// While the fleet switches layouts, a two-key gateway may renew or
// re-acquire a lease granted with one key (no fence key, or an older
// one). Its hash then lives only to expires_at, so the token must move to
// the fence key: after the lease ends and the Redis clock steps back,
// the next token is still above it.
func TestATwoKeyRenewOfAOneKeyLeaseKeepsItsToken(t *testing.T) {
	for _, how := range []string{"renew", "re-acquire"} {
		t.Run(how, func(t *testing.T) {
			e := newMiniEngine(t)
			prefix := uniquePrefix(t)
			l2 := redislock.New(e.RDB, redislock.Options{Prefix: prefix})
			l1 := redislock.New(e.RDB, redislock.Options{Prefix: prefix, Layout: redislock.LayoutOneKey})
			ctx := context.Background()
			// An older fence key, as the two-key layout leaves it.
			mustAcquire(t, l2, "r", "a", ttl)
			mustRelease(t, l2, "r", "a")
			e.Mini.SetTime(epoch.Add(time.Second))
			lk := mustAcquire(t, l1, "r", "b", ttl)
			if how == "renew" {
				if _, err := l2.Renew(ctx, "r", "b", lk.Token, ttl); err != nil {
					t.Fatal(err)
				}
			} else {
				mustAcquire(t, l2, "r", "b", ttl)
			}
			e.Mini.FastForward(ttl + time.Millisecond) // Redis reaps what ended
			e.Mini.SetTime(epoch)                      // and its clock steps back
			for _, l := range []*redislock.Locker{l2, l1} {
				next := mustAcquire(t, l, "r", "c", ttl)
				if next.Token <= lk.Token {
					t.Fatalf("got token %d, want above %d", next.Token, lk.Token)
				}
				mustRelease(t, l, "r", "c")
			}
		})
	}
}
