package redislock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// increasing checks each token is above the one before it.
type increasing struct {
	t    *testing.T
	last int64
	seen []int64
}

func (inc *increasing) add(step string, tok int64) {
	inc.t.Helper()
	if tok <= inc.last {
		inc.t.Fatalf("%s: got token %d, want above the previous %d (all so far: %v)", step, tok, inc.last, inc.seen)
	}
	inc.last = tok
	inc.seen = append(inc.seen, tok)
}

func TestFencingTokensIncreaseAcrossReleaseExpiryAndGatewayRestart(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		prefix := uniquePrefix(t)
		inc := &increasing{t: t}
		l := wrap(redislock.New(e.RDB, redislock.Config{Prefix: prefix}))
		for i := 0; i < 5; i++ {
			inc.add("acquire after release", mustAcquire(t, l, "r", "svc-a", ttl).Token)
			mustRelease(t, l, "r", "svc-a")
		}
		for i := 0; i < 3; i++ {
			inc.add("acquire after expiry", mustAcquire(t, l, "r", "svc-b", 50*time.Millisecond).Token)
			e.Advance(t, 51*time.Millisecond)
		}
		// A gateway restart: a new client and a new Locker on the same Redis.
		rdb2 := redis.NewClient(&redis.Options{Addr: e.RDB.Options().Addr})
		t.Cleanup(func() { _ = rdb2.Close() })
		l2 := wrap(redislock.New(rdb2, redislock.Config{Prefix: prefix}))
		inc.add("acquire on a restarted gateway", mustAcquire(t, l2, "r", "svc-c", ttl).Token)
		mustRelease(t, l2, "r", "svc-c")
		inc.add("acquire on the first gateway again", mustAcquire(t, l, "r", "svc-d", ttl).Token)
	})
}

func TestFencingTokensAreAtLeastTheRedisClockInMicroseconds(t *testing.T) {
	t.Parallel()
	e := newMiniEngine(t)
	l := newLocker(t, e.RDB, redislock.Config{})
	lk := mustAcquire(t, l, "r", "svc-a", ttl)
	if want := epoch.UnixMicro(); lk.Token != want {
		t.Errorf("got first token %d, want Redis TIME in µs %d", lk.Token, want)
	}
	mustRelease(t, l, "r", "svc-a")
	// Same microsecond: the tombstone's token gives last+1.
	if got := mustAcquire(t, l, "r", "svc-b", ttl).Token; got != lk.Token+1 {
		t.Errorf("got token %d in the same µs, want last+1 = %d", got, lk.Token+1)
	}
}

func TestFencingTokensKeepIncreasingWhenTheClockStepsBackWhileTheFenceKeyLives(t *testing.T) {
	t.Parallel()
	e := newMiniEngine(t)
	l := newLocker(t, e.RDB, redislock.Config{})
	first := mustAcquire(t, l, "r", "svc-a", ttl)
	mustRelease(t, l, "r", "svc-a")
	e.Mini.SetTime(epoch.Add(-time.Hour)) // NTP steps the Redis host's clock back an hour
	if got := mustAcquire(t, l, "r", "svc-b", ttl).Token; got != first.Token+1 {
		t.Errorf("got token %d, want last+1 = %d", got, first.Token+1)
	}
}

func TestFencingTokensStayAboveEarlierOnesAfterTheTombstoneExpires(t *testing.T) {
	t.Parallel()
	e := newMiniEngine(t)
	l := newLocker(t, e.RDB, redislock.Config{FenceRetention: time.Minute})
	first := mustAcquire(t, l, "r", "svc-a", ttl)
	mustRelease(t, l, "r", "svc-a")
	if got := e.RDB.PTTL(context.Background(), lockKey(l, "r")).Val(); got != ttl+time.Minute {
		t.Errorf("got tombstone PTTL %v, want lease ttl + retention = %v", got, ttl+time.Minute)
	}
	e.Advance(t, ttl+time.Minute)
	if n := e.RDB.Exists(context.Background(), lockKey(l, "r")).Val(); n != 0 {
		t.Fatalf("got %d tombstones after the retention, want 0", n)
	}
	if got := mustAcquire(t, l, "r", "svc-b", ttl).Token; got <= first.Token {
		t.Errorf("got token %d, want above %d from the time floor", got, first.Token)
	}
}

// This pins a documented limit (docs/fencing.md): once the fence is gone
// (the lock hash's tombstone that keeps the token),
// the only floor is the Redis clock; if that clock has stepped back by more
// than the time since the last token, a token can repeat or fall.
func TestFencingLimitATokenCanFallWhenTheClockStepsBackAfterTheFenceKeyIsGone(t *testing.T) {
	t.Parallel()
	e := newMiniEngine(t)
	l := newLocker(t, e.RDB, redislock.Config{})
	first := mustAcquire(t, l, "r", "svc-a", ttl)
	mustRelease(t, l, "r", "svc-a")
	if err := e.RDB.Del(context.Background(), lockKey(l, "r")).Err(); err != nil {
		t.Fatalf("DEL tombstone: %v", err)
	}
	e.Mini.SetTime(epoch.Add(-time.Hour))
	if got := mustAcquire(t, l, "r", "svc-b", ttl).Token; got >= first.Token {
		t.Errorf("got token %d, want below %d: the limit in docs/fencing.md no longer holds, update the docs", got, first.Token)
	}
}

func TestFencingTokensSurviveARedisRestartWithAOF(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := srv.Client(t)
	prefix := uniquePrefix(t)
	l := wrap(redislock.New(rdb, redislock.Config{Prefix: prefix}))
	inc := &increasing{t: t}
	inc.add("first acquire", mustAcquire(t, l, "r", "svc-a", ttl).Token)
	mustRelease(t, l, "r", "svc-a")
	inc.add("second acquire", mustAcquire(t, l, "r", "svc-a", ttl).Token)
	held := inc.last

	srv.Restart()

	rdb2 := srv.Client(t)
	l2 := wrap(redislock.New(rdb2, redislock.Config{Prefix: prefix}))
	ctx := context.Background()
	fence, err := rdb2.HGet(ctx, lockKey(l2, "r"), "token").Result()
	if err != nil || fence != strconv.FormatInt(held, 10) {
		t.Fatalf("got token %q, %v after restart; want %d loaded from the AOF", fence, err, held)
	}
	st, err := l2.Status(ctx, "r")
	if err != nil || st.Token != held {
		t.Fatalf("got status %+v, %v after restart; want the live lease with token %d", st, err, held)
	}
	mustRelease(t, l2, "r", "svc-a")
	inc.add("acquire after the restart", mustAcquire(t, l2, "r", "svc-b", ttl).Token)
}

func TestFencingTokensStayAboveEarlierOnesAfterARedisRestartWithoutPersistence(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	prefix := uniquePrefix(t)
	l := wrap(redislock.New(rdb, redislock.Config{Prefix: prefix}))
	inc := &increasing{t: t}
	for i := 0; i < 3; i++ {
		inc.add("acquire before the restart", mustAcquire(t, l, "r", "svc-a", ttl).Token)
		mustRelease(t, l, "r", "svc-a")
	}

	srv.Restart()

	rdb2 := srv.Client(t)
	l2 := wrap(redislock.New(rdb2, redislock.Config{Prefix: prefix}))
	if n := rdb2.Exists(context.Background(), lockKey(l2, "r")).Val(); n != 0 {
		t.Fatalf("got %d tombstones after a restart without persistence, want 0 (the test relies on losing it)", n)
	}
	inc.add("acquire after the tombstone was lost", mustAcquire(t, l2, "r", "svc-b", ttl).Token)
}
