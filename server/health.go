package server

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/storehealth"
)

// guardHealth puts the outage guard (internal/storehealth) on every Redis
// node the gateway talks to: the client itself for a single node, the
// embedded Redis or a Sentinel-followed master (whose node is called
// "master": its address changes with failovers), each node client on
// Redis Cluster as go-redis makes it. A node that goes down wakes every
// waiting acquire, so that each meets the outage at once; one that comes
// back reopens the release subscriptions at once (docs/operations.md,
// "Redis is down"). On Cluster, topology follows the slot map, so that a
// failover's promoted replica serves and the dead master's state goes.
func (s *Server) guardHealth() {
	s.health = storehealth.New(storehealth.Options{
		Log: s.log.Named("redis"),
		OnChange: func(c storehealth.Change) {
			if c.Gone {
				s.metrics.RedisNodeGone(c.Node)
				return
			}
			s.metrics.RedisState(c.Node, c.Up, !c.New)
			w := s.wakeOnOutage.Load()
			switch {
			case w == nil || c.New:
			case c.Up:
				w.StoreBack()
			default:
				w.WakeAll()
			}
		},
	})
	instrument(s.rdb, func(node *redis.Client) redis.Hook {
		name := node.Options().Addr
		if s.cfg.redisMode() == "sentinel" {
			name = "master"
		}
		return s.health.Hook(name, node)
	})
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		s.topology = newTopology(cc, s.health, s.metrics, s.log.Named("redis"))
		instrument(s.rdb, s.topology.hook)
	}
}

// traceRedis, with tracing on, puts go-redis's redisotel hook on every
// Redis node, as instrument does (the client itself, or each node client
// of a Cluster as go-redis makes it): a span per command, or per pipeline
// of the Batcher, child of the span in the call's context (the request's).
// The spans carry no command arguments (resource names, owners, user
// ids) and no caller frames (a runtime.Callers per command); the gateway's
// own calls, outside any request, start no trace
// (tracing.RequestsOnly).
func (s *Server) traceRedis() error {
	if s.cfg.Tracing == nil {
		return nil
	}
	err := redisotel.InstrumentTracing(s.rdb,
		redisotel.WithTracerProvider(s.cfg.Tracing),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false),
	)
	if err != nil {
		return fmt.Errorf("server: tracing: %w", err)
	}
	return nil
}

// pingReady is /readyz's question to Redis: PING on a single node or
// Sentinel master; on Cluster, every master, of which one answering is
// enough: the other masters' slots still serve, and every gateway sees the
// same dead master, so taking gateways out of a load balancer would not
// help (the dead masters are in the log and in leasegate_redis_up). A
// node known down refuses the PING at once, without a dial, so /readyz
// answers what calls are told, as fast.
func (s *Server) pingReady(ctx context.Context) error {
	cc, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return s.rdb.Ping(ctx).Err()
	}
	var (
		mu       sync.Mutex
		answered int
		last     error
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		err := c.Ping(ctx).Err()
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
