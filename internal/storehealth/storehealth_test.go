package storehealth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/storehealth"
)

// changes records a Health's changes and signals each one.
type changes struct {
	mu   sync.Mutex
	list []storehealth.Change
	c    chan storehealth.Change
}

func newChanges() *changes { return &changes{c: make(chan storehealth.Change, 64)} }

func (r *changes) record(c storehealth.Change) {
	r.mu.Lock()
	r.list = append(r.list, c)
	r.mu.Unlock()
	r.c <- c
}

// next waits for the next change that is not a node's first appearance.
func (r *changes) next(t *testing.T, within time.Duration) storehealth.Change {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case c := <-r.c:
			if !c.New {
				return c
			}
		case <-timer.C:
			t.Fatalf("no change of state within %v", within)
		}
	}
}

// guarded returns a client of srv guarded by a new Health, with the
// gateway's settings: no retries, one dial attempt, the grace as the
// dial, read and write timeouts.
func guarded(t *testing.T, addr string, grace time.Duration, opts ...func(*redis.Options)) (*redis.Client, *changes) {
	t.Helper()
	c, rec, _ := guardedBy(t, addr, grace, opts...)
	return c, rec
}

// guardedBy is guarded, and the Health.
func guardedBy(t *testing.T, addr string, grace time.Duration, opts ...func(*redis.Options)) (*redis.Client, *changes, *storehealth.Health) {
	t.Helper()
	rec := newChanges()
	h := storehealth.New(storehealth.Options{OnChange: rec.record})
	o := &redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1,
		DialTimeout: grace, ReadTimeout: grace, WriteTimeout: grace, ContextTimeoutEnabled: true}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	c.AddHook(h.Hook(addr, c))
	t.Cleanup(func() {
		_ = c.Close()
		h.Close()
	})
	return c, rec, h
}

func TestAKilledRedisIsRefusedAtOnceAndFoundAgainWhenBack(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, rec := guarded(t, srv.Addr(), time.Second)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET before the outage: %v", err)
	}

	srv.Kill()
	// The first call meets the dead node: its pooled connection is
	// reset, or its dial refused.
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatal("GET on a killed Redis: got no error")
	}
	if got := rec.next(t, 5*time.Second); got.Up || got.Node != srv.Addr() {
		t.Fatalf("got change %+v, want %s down", got, srv.Addr())
	}

	// Known down: every call is refused without a dial, with ErrDown.
	for i := 0; i < 100; i++ {
		err := c.Get(ctx, "k").Err()
		if !errors.Is(err, storehealth.ErrDown) {
			t.Fatalf("GET %d while down: got %v, want ErrDown", i, err)
		}
	}
	err := c.Pipeline().Get(ctx, "k").Err()
	_, perr := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "k"); return nil })
	if !errors.Is(perr, storehealth.ErrDown) {
		t.Fatalf("pipeline while down: got %v (%v), want ErrDown", perr, err)
	}

	srv.Restart()
	back := time.Now()
	if got := rec.next(t, 5*time.Second); !got.Up {
		t.Fatalf("got change %+v, want up", got)
	}
	t.Logf("up %v after Redis was restarted", time.Since(back))
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET after the outage: %v", err)
	}
}

// TestANodeThatStopsServingHasNoState: a dead node that SetMasters no longer
// lists (a Cluster master replaced by a failover) drops its down state
// and its probe, and its failures no longer take it down; listed again,
// it starts up.
func TestANodeThatStopsServingHasNoState(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, rec, h := guardedBy(t, srv.Addr(), time.Second)
	ctx := context.Background()
	srv.Kill()
	_ = c.Get(ctx, "k").Err()
	if got := rec.next(t, 5*time.Second); got.Up || got.Gone {
		t.Fatalf("got change %+v, want down", got)
	}
	if !h.AnyDown() {
		t.Fatal("AnyDown with the node down: got false, want true")
	}

	h.SetMasters([]string{"127.0.0.1:1"})
	if got := rec.next(t, 5*time.Second); !got.Gone || got.Node != srv.Addr() {
		t.Fatalf("got change %+v, want %s gone", got, srv.Addr())
	}
	if h.AnyDown() {
		t.Error("AnyDown once the dead node stopped serving: got true, want false")
	}
	err := c.Get(ctx, "k").Err()
	if err == nil || errors.Is(err, storehealth.ErrDown) {
		t.Errorf("GET on a dead node that does not serve: got %v, want the dial's own error", err)
	}
	if h.AnyDown() {
		t.Error("AnyDown after a failure of a node that does not serve: got true, want false")
	}

	// Listed again it starts up: the next call tries it, and takes it
	// down.
	h.SetMasters([]string{srv.Addr()})
	_ = c.Get(ctx, "k").Err()
	if got := rec.next(t, 5*time.Second); got.Up || got.Gone {
		t.Fatalf("got change %+v, want down: it serves again", got)
	}
}

// TestCallsWhileDownNeitherDialNorWait: with the node known down, 64
// concurrent callers each get ErrDown without a dial, and only the probe
// dials.
func TestCallsWhileDownNeitherDialNorWait(t *testing.T) {
	t.Parallel()
	addr := redistest.DeadAddr(t) // nothing serves
	var dials atomic.Int64
	rec := newChanges()
	h := storehealth.New(storehealth.Options{OnChange: rec.record, ProbeInterval: time.Hour})
	t.Cleanup(h.Close)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}})
	c.AddHook(h.Hook(addr, c))
	t.Cleanup(func() { _ = c.Close() })

	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("first PING to a closed port: got no error")
	}
	if got := rec.next(t, 5*time.Second); got.Up {
		t.Fatalf("got %+v, want down", got)
	}
	// The first call's dial; the probe (every hour here) PINGs once when
	// the node goes down, which may dial before or after this.
	redistest.Eventually(t, 5*time.Second, "the first call's dial", func() bool { return dials.Load() >= 1 })
	before := dials.Load()

	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 10; j++ {
				if err := c.Get(ctx, "k").Err(); !errors.Is(err, storehealth.ErrDown) {
					t.Errorf("GET while down: got %v, want ErrDown", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := dials.Load() - before; got > 1 {
		t.Errorf("got %d dials during 640 calls while down, want at most the probe's one", got)
	}
}

// TestRecoveryAfterALongOutageIsQuick: go-redis's pool, after PoolSize
// failed dials, fails every dial at once and retries one dial a second.
// The probe dials every 25 ms, so 1.5 s of outage are 60 dials, past that
// count on any machine of up to 6 CPUs: the probe must still find Redis
// back within a few probe intervals, not go-redis's second, round after
// round.
func TestRecoveryAfterALongOutageIsQuick(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c, rec := guarded(t, srv.Addr(), time.Second)
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_ = c.Ping(ctx).Err()
	if got := rec.next(t, 5*time.Second); got.Up {
		t.Fatalf("got %+v, want down", got)
	}
	// Time must pass for the probe's dials to add up.
	time.Sleep(1500 * time.Millisecond)
	for round := 1; round <= 3; round++ {
		srv.Restart()
		back := time.Now()
		if got := rec.next(t, 5*time.Second); !got.Up {
			t.Fatalf("got %+v, want up", got)
		}
		took := time.Since(back)
		t.Logf("round %d: up %v after Redis was back", round, took)
		// go-redis's own retry takes up to a second; generous for a
		// loaded machine, but under it.
		if took > 600*time.Millisecond {
			t.Errorf("round %d: up %v after Redis was back, want within 600ms", round, took)
		}
		srv.Stop()
		_ = c.Ping(ctx).Err()
		if got := rec.next(t, 5*time.Second); got.Up {
			t.Fatalf("got %+v, want down", got)
		}
		time.Sleep(700 * time.Millisecond)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	// expired's deadline has passed but its timer has not fired yet:
	// go-redis's connection deadline is the context's, so a read can time
	// out on it before the context says so.
	expired := unfiredContext{Context: live, deadline: time.Now().Add(-time.Millisecond)}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"a refused dial", live, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"a reset connection", live, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{"a connection closed by the peer", live, io.EOF, true},
		{"a read that timed out", live, timeout, true},
		{"a read that timed out on the caller's own deadline", done, timeout, false},
		{"a write that met the caller's deadline before its timer fired", expired, &net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{"a read that timed out before the caller's deadline", unfiredContext{Context: live, deadline: time.Now().Add(time.Hour)}, timeout, true},
		{"the caller went away", live, context.Canceled, false},
		{"LOADING after a restart", live, redisErr(t, "LOADING Redis is loading the dataset in memory"), true},
		{"MASTERDOWN", live, redisErr(t, "MASTERDOWN Link with MASTER is down"), true},
		{"READONLY, an answer", live, redisErr(t, "READONLY You can't write against a read only replica."), false},
		{"NOSCRIPT, an answer", live, redisErr(t, "NOSCRIPT No matching script."), false},
		{"CLUSTERDOWN, an answer", live, redisErr(t, "CLUSTERDOWN The cluster is down"), false},
		{"a missing key", live, redis.Nil, false},
		{"a full pool", live, redis.ErrPoolTimeout, false},
		{"a closed client", live, redis.ErrClosed, false},
		{"already known down", live, fmt.Errorf("x: %w", storehealth.ErrDown), false},
		{"no error", live, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := storehealth.Unreachable(tc.ctx, tc.err); got != tc.want {
				t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// unfiredContext has a deadline and no error, whether or not the
// deadline has passed: a context whose timer has not fired yet.
type unfiredContext struct {
	context.Context
	deadline time.Time
}

func (c unfiredContext) Deadline() (time.Time, bool) { return c.deadline, true }

// redisErr is the error reply msg as go-redis returns it (a type of its
// internal package), read from a miniredis told to answer it.
func redisErr(t *testing.T, msg string) error {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetError(msg)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	err := c.Get(context.Background(), "k").Err()
	var reply redis.Error
	if !errors.As(err, &reply) {
		t.Fatalf("miniredis answered %v, want an error reply", err)
	}
	return err
}

// TestALoadingRedisIsDownUntilItAnswersPing: after a restart Redis
// answers LOADING to everything, PING included, until its data set is
// read: the node is down until then, through a pipeline as through a
// single command, and other error replies leave it up.
func TestALoadingRedisIsDownUntilItAnswersPing(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	// One connection: with more, go-redis's pool may dial a new one for
	// the pipeline below (3 to 24 runs in 300 here), whose HELLO gets the
	// LOADING reply first and takes the node down before the pipeline
	// runs, so the pipeline would not be the call that meets LOADING.
	c, rec := guarded(t, m.Addr(), time.Second, func(o *redis.Options) { o.PoolSize = 1 })
	ctx := context.Background()

	if err := c.Do(ctx, "NOSUCHCOMMAND").Err(); err == nil {
		t.Fatal("an unknown command: got no error")
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after an error reply: got %v, want redis.Nil (the node still up)", err)
	}

	m.SetError("LOADING Redis is loading the dataset in memory")
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		return nil
	})
	if err == nil || errors.Is(err, storehealth.ErrDown) {
		t.Fatalf("pipeline on a loading Redis: got %v, want its LOADING reply", err)
	}
	if got := rec.next(t, 5*time.Second); got.Up {
		t.Fatalf("got %+v, want down", got)
	}
	if err := c.Get(ctx, "k").Err(); !errors.Is(err, storehealth.ErrDown) {
		t.Fatalf("GET while loading: got %v, want ErrDown", err)
	}

	m.SetError("")
	if got := rec.next(t, 5*time.Second); !got.Up {
		t.Fatalf("got %+v, want up", got)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET once loaded: %v", err)
	}
}
