package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/server"
)

// replyDropper is a TCP proxy to a Redis server that, once armed, lets the
// next command through but cuts the connection instead of passing its
// reply on: Redis has run the command and the client sees EOF.
type replyDropper struct {
	ln    net.Listener
	armed atomic.Bool
	wg    sync.WaitGroup
}

func newReplyDropper(t *testing.T, target string) *replyDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyDropper{ln: ln}
	var mu sync.Mutex
	var conns []net.Conn
	track := func(c ...net.Conn) {
		mu.Lock()
		conns = append(conns, c...)
		mu.Unlock()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			track(c, s)
			p.wg.Add(2)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(s, c)
				_ = s.Close()
			}()
			go func() {
				defer p.wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if err != nil {
						return
					}
					if p.armed.CompareAndSwap(true, false) {
						_ = s.Close()
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// TestALostReplyIsNeverReSent: go-redis re-sends a command whose reply it
// lost unless told not to, and a re-sent release or user-lock attempt
// changes its answer (a release that worked answers "not found"; an
// attempt is counted twice). The gateway's client must send each script
// once and report the lost reply as unavailable.
func TestALostReplyIsNeverReSent(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, addr string) {
		p := newReplyDropper(t, addr)
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://" + p.ln.Addr().String()
		rdb, err := redisconn.NewClient(cfg.RedisOptions())
		if err != nil {
			t.Fatalf("NewRedisClient: %v", err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		ctx := context.Background()
		l := redislock.NewService(redislock.New(rdb, redislock.Config{Prefix: "rr:"}), nil)
		// Load the scripts first, so the armed command is the script itself.
		if _, err := l.Release(ctx, "", "warm-up", "o", 0); err != nil {
			t.Fatalf("warm-up release: %v", err)
		}

		t.Run("a release whose reply was lost is unavailable, and released once", func(t *testing.T) {
			held, err := l.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "job", Owner: "o", TTL: time.Minute})
			if err != nil || !held.Acquired {
				t.Fatalf("acquire: got %+v, %v", held, err)
			}
			p.armed.Store(true)
			got, err := l.Release(ctx, "", "job", "o", held.Lock.Token)
			if !errors.Is(err, leasegate.ErrUnavailable) {
				t.Fatalf("release: got %v, %v; want leasegate.ErrUnavailable (the reply was lost)", got, err)
			}
			if p.armed.Load() {
				t.Fatal("the reply was not dropped: the test did not exercise a lost reply")
			}
			if _, err := l.Status(ctx, "", "job"); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Errorf("status after the release: got %v, want ErrLockNotHeld (it did run once)", err)
			}
		})

		t.Run("a user-lock attempt whose reply was lost is counted once", func(t *testing.T) {
			svc := abuse.New(rdb, abuse.Options{Prefix: "rr:"})
			if _, err := svc.Attempt(ctx, "", "login", "warm", time.Minute, leasegate.RequestMeta{}); err != nil {
				t.Fatalf("warm-up attempt: %v", err)
			}
			p.armed.Store(true)
			if _, err := svc.Attempt(ctx, "", "login", "u1", time.Minute, leasegate.RequestMeta{}); err == nil {
				t.Fatal("attempt with a lost reply: got no error, want one")
			}
			res, err := svc.Attempt(ctx, "", "login", "u1", time.Minute, leasegate.RequestMeta{})
			if err != nil {
				t.Fatalf("next attempt: %v", err)
			}
			if res.Attempts != 2 {
				t.Errorf("next attempt: got attempts %d, want 2 (the lost one ran once)", res.Attempts)
			}
		})
	}
	t.Run("on miniredis", func(t *testing.T) { run(t, miniredis.RunT(t).Addr()) })
	t.Run("on redis-server", func(t *testing.T) { run(t, redistest.Start(t).Addr()) })
}
