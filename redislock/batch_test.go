package redislock_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// newBatcher returns a Batcher on a client of e's Redis that never
// re-sends a command (as the server builds it).
func newBatcher(t *testing.T, addr string) *redislock.Batcher {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	b, err := redislock.NewBatcher(rdb, redislock.BatchOptions{})
	if err != nil {
		t.Fatalf("NewBatcher: %v", err)
	}
	t.Cleanup(func() { b.Close(); _ = rdb.Close() })
	return b
}

func TestBatcherGivesEachCallerItsOwnAnswer(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		l := wrap(redislock.New(newBatcher(t, e.RDB.Options().Addr), redislock.Config{Prefix: uniquePrefix(t)}))
		const n = 64
		var wg sync.WaitGroup
		errs := make([]error, n)
		won := make([]bool, n)
		tokens := make([]int64, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Half on their own resource, half on one shared one.
				res := "own-" + strconv.Itoa(i)
				if i%2 == 1 {
					res = "shared"
				}
				r, err := l.Acquire(ctx, res, "owner-"+strconv.Itoa(i), ttl)
				errs[i], won[i], tokens[i] = err, r.Acquired, r.Lock.Token
				if err == nil && r.Acquired && r.Lock.Owner != "owner-"+strconv.Itoa(i) {
					errs[i] = errors.New("got someone else's lock: " + r.Lock.Owner)
				}
			}()
		}
		wg.Wait()
		sharedWinners := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			if i%2 == 0 && !won[i] {
				t.Errorf("caller %d: got its own resource refused, want it granted", i)
			}
			if i%2 == 1 && won[i] {
				sharedWinners++
			}
		}
		if sharedWinners != 1 {
			t.Errorf("got %d winners of the shared resource, want 1", sharedWinners)
		}
		for i := 0; i < n; i += 2 {
			got, err := l.Release(ctx, "own-"+strconv.Itoa(i), "owner-"+strconv.Itoa(i), tokens[i])
			if err != nil || got != leasegate.Released {
				t.Errorf("Release %d: got %v, %v, want released", i, got, err)
			}
		}
	})
}

func TestBatcherLoadsTheScriptWhenRedisHasNone(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		if err := e.RDB.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		l := wrap(redislock.New(newBatcher(t, e.RDB.Options().Addr), redislock.Config{Prefix: uniquePrefix(t)}))
		if r, err := l.Acquire(ctx, "r", "a", ttl); err != nil || !r.Acquired {
			t.Fatalf("Acquire after SCRIPT FLUSH: got %+v, %v, want granted (EVAL fallback)", r, err)
		}
	})
}

func TestBatcherFailedPipelineIsUnavailableNeverAGrant(t *testing.T) {
	t.Parallel()
	// A "Redis" that reads the pipeline and drops the connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			_, _ = c.Read(buf)
			_ = c.Close()
		}
	}()
	l := wrap(redislock.New(newBatcher(t, ln.Addr().String()), redislock.Config{}))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := l.Acquire(context.Background(), "r"+strconv.Itoa(i), "a", ttl)
			if !errors.Is(err, leasegate.ErrUnavailable) || r.Acquired {
				t.Errorf("got %+v, %v, want ErrUnavailable and no grant", r, err)
			}
		}()
	}
	wg.Wait()
}

func TestBatcherNeverSendsACallWhoseContextEnded(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		prefix := uniquePrefix(t)
		l := wrap(redislock.New(newBatcher(t, e.RDB.Options().Addr), redislock.Config{Prefix: prefix}))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		r, err := l.Acquire(ctx, "r", "a", ttl)
		if !errors.Is(err, leasegate.ErrUnavailable) || !errors.Is(err, context.Canceled) || r.Acquired {
			t.Fatalf("got %+v, %v, want ErrUnavailable wrapping context.Canceled", r, err)
		}
		lock, _ := l.Keys("r")
		if n := e.RDB.Exists(context.Background(), lock).Val(); n != 0 {
			t.Errorf("got %d lock keys, want 0: the call was sent", n)
		}
	})
}

func TestBatcherRefusesAClientThatRetries(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	if _, err := redislock.NewBatcher(rdb, redislock.BatchOptions{}); err == nil {
		t.Fatal("got a Batcher on a client with MaxRetries 3, want an error")
	}
}

func TestBatcherAfterCloseFailsUnsent(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		b := newBatcher(t, e.RDB.Options().Addr)
		b.Close()
		l := wrap(redislock.New(b, redislock.Config{Prefix: uniquePrefix(t)}))
		if _, err := l.Acquire(context.Background(), "r", "a", ttl); !errors.Is(err, redislock.ErrBatcherClosed) {
			t.Fatalf("got %v, want ErrBatcherClosed", err)
		}
	})
}
