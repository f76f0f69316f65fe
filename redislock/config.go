package redislock

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is the configuration the engines share: locks and lock sets
// (Locker), semaphores and elections. The server builds one and gives it
// to each; zero fields take the defaults (Defaults).
type Config struct {
	// Prefix starts every key, e.g. "lg:". Default keyspace.DefaultPrefix.
	Prefix string
	// FenceRetention is how long a lock's, semaphore's or election's fence
	// outlives its last holder (see DefaultFenceRetention).
	FenceRetention time.Duration
	// ReleaseChannel, when set, is the pub/sub channel a release publishes
	// its release message on while some acquire waits, so waiters can wake
	// up (the Waiter's channel). It must not contain '{': the scripts take
	// a channel with a hash tag for a shard channel.
	ReleaseChannel string
	// ShardedReleases (Redis Cluster >= 7; with ReleaseChannel set) makes
	// releases SPUBLISH on each object's shard channel (Released in package
	// keyspace) instead of PUBLISH on ReleaseChannel, so a release reaches
	// only the node of its slot and the gateways subscribed there (Waiter
	// with WaiterOptions.Shards); waits subscribe to it.
	ShardedReleases bool
	// MinReplicas, when above 0, makes every grant (an acquire that gave a
	// lease or permit, and every renew) send WAIT MinReplicas
	// ReplicaTimeout on the connection that ran the script, so it counts
	// only once that many replicas have it. See replicate.go.
	MinReplicas int
	// ReplicaTimeout bounds that WAIT (default DefaultReplicaTimeout).
	ReplicaTimeout time.Duration
	// OpTimeout bounds each Redis call of a waiting acquire and of a
	// watcher (default DefaultOpTimeout).
	OpTimeout time.Duration
	// OnRelease, when set, is told how long each released lock was held
	// (by the Redis clock), for the contention metrics. Only the locks
	// call it.
	OnRelease func(tenant, resource string, held time.Duration)
	// OnIndexFailure, when set, is told of each new grant the lock index's
	// second step (Redis Cluster, index.go) failed to add: the lease is
	// granted but not listed until its next grant.
	OnIndexFailure func()
}

// DefaultFenceRetention is how long a resource's lock key outlives its
// last lease, as a tombstone holding the last token (docs/keys.md). While
// it lives, tokens increase by at least one per holder even if the Redis
// clock steps backwards; after it is gone they still never fall below the
// server clock in microseconds.
const DefaultFenceRetention = 24 * time.Hour

// DefaultReplicaTimeout is the WAIT timeout when MinReplicas is set and
// ReplicaTimeout is not.
const DefaultReplicaTimeout = 100 * time.Millisecond

// Defaults returns c with every unset duration at its default. A
// ReplicaTimeout under 1 ms counts as unset: WAIT takes milliseconds, and
// WAIT 0 would block until enough replicas acknowledge.
func (c Config) Defaults() Config {
	if c.FenceRetention <= 0 {
		c.FenceRetention = DefaultFenceRetention
	}
	if c.ReplicaTimeout < time.Millisecond {
		c.ReplicaTimeout = DefaultReplicaTimeout
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	return c
}

// Replication is c's WAIT after grants, for scripts run on rdb.
func (c Config) Replication(rdb redis.Scripter) Replication {
	return Replication{RDB: rdb, MinReplicas: c.MinReplicas, Timeout: c.ReplicaTimeout}
}

// Channel is the channel a release of an object publishes on, "" for
// none: with ShardedReleases its shard channel (shard returns it; it is
// called only then), else ReleaseChannel.
func (c Config) Channel(shard func() string) string {
	if c.ReleaseChannel != "" && c.ShardedReleases {
		return shard()
	}
	return c.ReleaseChannel
}

// ShardChannel is the shard channel a wait on an object subscribes to,
// "" when releases are not sharded.
func (c Config) ShardChannel(shard func() string) string {
	if !c.ShardedReleases {
		return ""
	}
	return c.Channel(shard)
}
