// Package leasegatetest runs a real leasegate gateway in process for the
// tests of a service that uses one, as net/http/httptest runs an HTTP
// server:
//
//	gw := leasegatetest.NewServer(t)
//	c := gw.Client() // a *client.Client for it
//	lease, err := c.Acquire(ctx, "report", time.Minute)
//	...
//	gw.FastForward(time.Minute) // the lease has expired
//
// The gateway is the one `leasegate serve` runs (package server), on a
// free loopback port, with its embedded in-memory Redis (miniredis) unless
// WithRedisURL names a real one; t.Cleanup shuts it down. Its store's
// clock moves with real time, and FastForward jumps it ahead (see there
// for what it moves and what it does not). docs/testing.md has the whole
// story, with the PHPUnit fixture of the PHP client.
package leasegatetest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

// Server is a running gateway.
type Server struct {
	t    testing.TB
	gw   *server.Server
	key  string
	real bool
}

// Option configures NewServer.
type Option func(*options)

type options struct {
	cfg      server.Config
	keys     []string
	firstKey string
}

// WithAPIKey gives the gateway an API key (at least 16 characters) with
// role (leasegate.RoleClient or leasegate.RoleOps) in tenant (1 to 64 of
// A-Z a-z 0-9 . _ -; keys of different tenants never see each other's
// locks), as an entry of --api-keys (docs/auth.md). A gateway with keys refuses calls
// without one; Client uses the first key given. Without any: open mode,
// every call is allowed, as an ops key.
func WithAPIKey(key string, role leasegate.Role, tenant string) Option {
	return func(o *options) {
		name := fmt.Sprintf("key%d", len(o.keys)+1)
		o.keys = append(o.keys, name+":"+string(role)+":"+tenant+":"+auth.HashKey(key))
		if o.firstKey == "" {
			o.firstKey = key
		}
	}
}

// WithAbusePolicies sets the user-lock policies (--abuse-policy-file;
// docs/abuse.md). The default is abuse.DefaultPolicies(): the 5th attempt
// in a window flags the user.
func WithAbusePolicies(p abuse.Policies) Option {
	return func(o *options) { o.cfg.AbusePolicies = p }
}

// WithRedisURL runs the gateway on the Redis at url (redis://host:port)
// instead of the embedded one, so that a test can run against
// redis-server too (say, when an environment variable names one); ""
// keeps the embedded store. The gateway's keys start with a prefix of
// its own (lgt:<random>:), so tests may share one Redis.
func WithRedisURL(url string) Option {
	return func(o *options) { o.cfg.RedisURL = url }
}

// WithConfig edits the gateway's configuration after the other options:
// the fields of `leasegate serve`'s flags (docs/configuration.md), e.g.
// c.HTTP.MaxWait (--max-wait), c.MaxWaiters (--max-waiters),
// c.HTTP.DefaultLockDelay (--default-lock-delay), c.HTTP.MaxTTL
// (--max-ttl). NewServer always listens on a free loopback port, and
// raises WriteTimeout above MaxWait plus RequestTimeout when an edit
// leaves it below (the gateway refuses to start otherwise).
func WithConfig(edit func(c *server.Config)) Option {
	return func(o *options) {
		if edit != nil {
			edit(&o.cfg)
		}
	}
}

// NewServer starts a gateway for the test t; t.Cleanup shuts it down. It
// fails t if the gateway does not start (an invalid option, say).
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := options{cfg: server.DefaultConfig()}
	o.cfg.AbuseLog = io.Discard
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.keys) > 0 {
		o.cfg.APIKeys = strings.Join(append(o.keys, o.cfg.APIKeys), ",")
	}
	if h := o.cfg.HTTP; o.cfg.WriteTimeout > 0 && o.cfg.WriteTimeout <= h.MaxWait+h.RequestTimeout {
		o.cfg.WriteTimeout = h.MaxWait + h.RequestTimeout + 15*time.Second
	}
	real := o.cfg.RedisURL != ""
	if real {
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.cfg.KeyPrefix = "lgt:" + hex.EncodeToString(b[:]) + ":"
	} else {
		o.cfg.EmbeddedRedisTestClock = true
	}
	gw := gatewaytest.Start(t, o.cfg, nil)
	gatewaytest.Maintain(t, gw)
	return &Server{t: t, gw: gw, key: o.firstKey, real: real}
}

// URL is the gateway's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return gatewaytest.URL(s.gw) }

// Client is a client of the gateway with the first key of WithAPIKey (if
// any) and then opts (client.WithAPIKey for another key).
func (s *Server) Client(opts ...client.Option) *client.Client {
	if s.key != "" {
		opts = append([]client.Option{client.WithAPIKey(s.key)}, opts...)
	}
	return client.New(s.URL(), opts...)
}

// FastForward moves the store's clock d ahead, as if d had passed, and
// returns when every waiting acquire has been told to look again: leases
// and lock delays have run d further (a lease whose TTL is up is gone),
// user-lock windows and flag records too, bans d closer to their end,
// and the store's TIME, which every script reads, is d later; acquires
// waiting with wait_ms retry at once, so one whose lock has expired gets
// it without waiting for its next retry.
//
// It does not move the gateway's own timers nor yours: a wait_ms, a
// request timeout, a client's keep-alive renewals and webhook retries
// still run on the real clock (a waiting acquire whose wait_ms is up is
// answered 409 as usual, however far the store has moved).
//
// On a real Redis (WithRedisURL) the clock cannot be moved: FastForward
// sleeps d instead, so the same test runs, only slower. Keep d short in
// a test meant for both.
func (s *Server) FastForward(d time.Duration) {
	s.t.Helper()
	if s.real {
		time.Sleep(d)
		return
	}
	if _, err := s.gw.AdvanceClock(d); err != nil {
		s.t.Fatalf("leasegatetest: FastForward: %v", err)
	}
}
