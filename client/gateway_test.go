package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/server"
)

// lockGateway is a gateway under test and a handle on its Redis.
type lockGateway struct {
	url    string
	rdb    *redis.Client
	locks  *redislock.Locker // the gateway's Locker, for key names
	mini   *miniredis.Miniredis
	server *redistest.Server
}

// newMiniGateway serves handlers.New over HTTP on a miniredis whose clock
// follows real time, with a subscribed Waiter.
func newMiniGateway(t testing.TB) *lockGateway {
	t.Helper()
	m := miniredis.RunT(t)
	stop := make(chan struct{})
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				m.FastForward(now.Sub(last))
				last = now
			}
		}
	}()
	t.Cleanup(func() { close(stop) })
	base, rdb, l, closeFn := serveRoutes(m.Addr())
	t.Cleanup(closeFn)
	return &lockGateway{url: base, rdb: rdb, locks: l, mini: m}
}

// serveRoutes serves the routes (handlers.New, open mode, with a
// subscribed Waiter) over HTTP on the Redis at addr.
func serveRoutes(addr string) (baseURL string, rdb *redis.Client, l *redislock.Locker, closeFn func()) {
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	ch := "ct:released"
	l = redislock.New(rdb, redislock.Config{Prefix: "ct:", ReleaseChannel: ch})
	w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: ch})
	e := handlers.New(handlers.DefaultConfig(), handlers.Deps{Locks: redislock.NewService(l, w)})
	hs := httptest.NewServer(e)
	return hs.URL, rdb, l, func() {
		hs.Close()
		w.Close()
		_ = rdb.Close()
	}
}

// newRealGateway runs server.New on a real redis-server that the test may
// kill.
func newRealGateway(t testing.TB) *lockGateway {
	t.Helper()
	rs := redistest.Start(t)
	cfg := server.DefaultConfig()
	cfg.RedisURL = rs.URL()
	cfg.HTTP.RequestTimeout = 500 * time.Millisecond
	s := gatewaytest.Start(t, cfg, nil)
	rdb := rs.Client(t)
	return &lockGateway{
		url:    gatewaytest.URL(s),
		rdb:    rdb,
		locks:  redislock.New(rdb, redislock.Config{Prefix: cfg.KeyPrefix}),
		server: rs,
	}
}

func (g *lockGateway) client(opts ...client.Option) *client.Client {
	return client.New(g.url, opts...)
}

// acquire takes resource for ttl through a new client of g.
func (g *lockGateway) acquire(t testing.TB, resource string, ttl time.Duration) (*client.Client, *client.Lease) {
	t.Helper()
	c := g.client()
	lease, err := c.Acquire(context.Background(), resource, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return c, lease
}

func (g *lockGateway) lockKey(resource string) string {
	k, _ := g.locks.Keys(resource)
	return k
}

// proxyTo forwards requests to the gateway at base.
func proxyTo(t testing.TB, base string) http.Handler {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return httputil.NewSingleHostReverseProxy(u)
}
