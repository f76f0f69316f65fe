package redisconn

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Release wake-ups on Redis Cluster (docs/waiting.md).
//
// A classic PUBLISH on Redis Cluster is sent to every node and from there
// to every gateway, so N gateways each read every release of the fleet.
// Sharded pub/sub (Redis >= 7.0) keeps a release on the node of its slot:
// the release scripts SPUBLISH on the resource's shard channel and each
// gateway SSUBSCRIBEs only the channels of resources it has waiters or
// watchers for. The gateway uses it on Cluster when every master runs
// Redis 7 or later, read once at start; below 7, or when a master
// cannot be read at start, releases stay on the one classic channel. A
// single Redis and Sentinel keep the classic channel: one node carries
// every message anyway, and PUBLISH needs no subscription per resource.

// shardedMinMajor is the first Redis major version with SPUBLISH.
const shardedMinMajor = 7

// ShardRouter returns the cluster client when releases are to be sharded,
// nil otherwise, and logs the choice on Cluster.
func (c *Conn) ShardRouter() *redis.ClusterClient {
	cc, ok := c.Client.(*redis.ClusterClient)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	defer cancel()
	old, err := mastersBelow(ctx, cc, shardedMinMajor)
	switch {
	case err != nil:
		c.log.Warn("release wake-ups: could not read the Redis version of every Cluster master; using classic PUBLISH until the gateway restarts (every gateway receives every published release)",
			zap.Error(err))
		return nil
	case len(old) > 0:
		c.log.Info("release wake-ups: classic PUBLISH, as some Cluster masters run Redis below 7 (no SPUBLISH)",
			zap.Strings("masters", old))
		return nil
	}
	c.log.Info("release wake-ups: sharded pub/sub (SPUBLISH/SSUBSCRIBE); a release reaches only its slot's master and the gateways waiting on it")
	return cc
}

// mastersBelow returns the masters (address and version) whose Redis
// major version is below major.
func mastersBelow(ctx context.Context, cc *redis.ClusterClient, major int) ([]string, error) {
	var mu sync.Mutex
	var old []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		text, err := c.Info(ctx, "server").Result()
		if err != nil {
			return fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		v := infoFields(text)["redis_version"]
		m, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		if err != nil {
			return fmt.Errorf("%s: INFO server: redis_version %q", c.Options().Addr, v)
		}
		if m < major {
			mu.Lock()
			old = append(old, c.Options().Addr+" ("+v+")")
			mu.Unlock()
		}
		return nil
	})
	return old, err
}
