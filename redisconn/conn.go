// Package redisconn connects the gateway to Redis: the go-redis client
// of a single node, a Sentinel-followed master or a Cluster (config.go),
// or the embedded in-memory store and its test clock (embedded.go); the
// outage guard on every node (internal/storehealth); the slot map watch
// on Cluster (topology.go); the deployment checks of start and /readyz
// (check.go); and the choice of release wake-ups (shards.go). It returns
// values that package server wires, and knows nothing of server.
package redisconn

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/internal/storehealth"
	"github.com/leasegate/leasegate/metrics"
)

// Conn is the gateway's connection to Redis. Close it when done.
type Conn struct {
	// Client is what every engine calls Redis with.
	Client redis.UniversalClient
	// Health knows which nodes are down and refuses their calls at once.
	Health *storehealth.Health

	opts     Options
	log      *zap.Logger
	guard    *guard    // nil on the embedded Redis
	topology *topology // nil but on Cluster

	mini         *miniredis.Miniredis
	stopEmbedded chan struct{}
	clock        *storeClock // nil on a real Redis
	closeOnce    sync.Once
}

// Hooks are what Open puts on every Redis call, in this order: a span
// (Tracing, when not nil), the outage guard (OnChange hears each node's
// new state), then Calls (the metrics of the calls the guard let through).
type Hooks struct {
	Log      *zap.Logger
	Metrics  *metrics.Metrics
	Tracing  trace.TracerProvider
	OnChange func(storehealth.Change)
	Calls    redis.Hook
}

// Open connects to validated options' Redis (or starts the embedded one),
// puts the hooks on it and checks the deployment (check.go). A Redis that
// cannot be reached is no error: calls and Ready answer 503 until it is.
func Open(o Options, h Hooks) (_ *Conn, err error) {
	c := &Conn{opts: o, log: h.Log}
	if c.log == nil {
		c.log = zap.NewNop()
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if o.Mode() == "embedded" {
		if err := c.startEmbedded(); err != nil {
			return nil, err
		}
	} else {
		if c.Client, err = NewClient(o); err != nil {
			return nil, err
		}
		logRedis(o, c.log)
	}
	if err := c.trace(h.Tracing); err != nil {
		return nil, err
	}
	c.guardHealth(h)
	if h.Calls != nil {
		Instrument(c.Client, func(*redis.Client) redis.Hook { return h.Calls })
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// EmbeddedAddr is where the embedded in-memory Redis listens; "" on a
// real Redis.
func (c *Conn) EmbeddedAddr() string {
	if c.mini == nil {
		return ""
	}
	return c.mini.Addr()
}

// Close stops the slot map watch and the outage guard, closes the client
// and stops the embedded Redis. It may be called more than once.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		// Health first: what the closing connections fail is no outage.
		if c.Health != nil {
			c.Health.Close()
		}
		if c.topology != nil {
			c.topology.close()
		}
		if c.Client != nil {
			_ = c.Client.Close()
		}
		if c.mini != nil {
			close(c.stopEmbedded)
			c.mini.Close()
		}
	})
}

// Instrument puts the hook that hook returns for each node client on
// every Redis call, once. A ClusterClient runs each command and pipeline
// through a node client, including the per-node pipelines of
// --min-replicas that bypass the cluster client's own hooks, so there the
// hook goes on every node (as it is created; nothing has been created
// before the first command); elsewhere the client is the node.
func Instrument(rdb redis.UniversalClient, hook func(node *redis.Client) redis.Hook) {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		c.OnNewNode(func(node *redis.Client) { node.AddHook(hook(node)) })
	case *redis.Client:
		c.AddHook(hook(c))
	}
}

// IsLoopback: addr is host:port on a loopback address or localhost.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guardHealth puts the outage guard (internal/storehealth) on every Redis
// node the gateway talks to: the client itself for a single node, the
// embedded Redis or a Sentinel-followed master (whose node is called
// "master": its address changes with failovers), each node client on
// Redis Cluster as go-redis makes it (docs/operations.md, "Redis is
// down"). On Cluster, topology follows the slot map, so that a
// failover's promoted replica serves and the dead master's state goes.
func (c *Conn) guardHealth(h Hooks) {
	c.Health = storehealth.New(storehealth.Options{Log: c.log.Named("redis"), OnChange: h.OnChange})
	Instrument(c.Client, func(node *redis.Client) redis.Hook {
		name := node.Options().Addr
		if c.opts.Mode() == "sentinel" {
			name = "master"
		}
		return c.Health.Hook(name, node)
	})
	if cc, ok := c.Client.(*redis.ClusterClient); ok {
		c.topology = newTopology(cc, c.Health, h.Metrics, c.log.Named("redis"))
		Instrument(c.Client, c.topology.hook)
	}
}

// trace, with tracing on, puts go-redis's redisotel hook on every
// Redis node, as instrument does (the client itself, or each node client
// of a Cluster as go-redis makes it): a span per command, or per pipeline
// of the Batcher, child of the span in the call's context (the request's).
// The spans carry no command arguments (resource names, owners, user
// ids) and no caller frames (a runtime.Callers per command); the gateway's
// own calls, outside any request, start no trace
// (tracing.RequestsOnly).
func (c *Conn) trace(tp trace.TracerProvider) error {
	if tp == nil {
		return nil
	}
	err := redisotel.InstrumentTracing(c.Client,
		redisotel.WithTracerProvider(tp),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false),
	)
	if err != nil {
		return fmt.Errorf("redisconn: tracing: %w", err)
	}
	return nil
}

// ping is Ready's PING: PING on a single node or
// Sentinel master; on Cluster, every master, of which one answering is
// enough: the other masters' slots still serve, and every gateway sees the
// same dead master, so taking gateways out of a load balancer would not
// help (the dead masters are in the log and in leasegate_redis_up). A
// node known down refuses the PING at once, without a dial, so /readyz
// answers what calls are told, as fast.
func (c *Conn) ping(ctx context.Context) error {
	cc, ok := c.Client.(*redis.ClusterClient)
	if !ok {
		return c.Client.Ping(ctx).Err()
	}
	var (
		mu       sync.Mutex
		answered int
		last     error
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		err := node.Ping(ctx).Err()
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			answered++
		} else {
			last = err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if answered == 0 {
		return last
	}
	return nil
}
