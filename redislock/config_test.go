package redislock_test

import (
	"testing"
	"time"

	"github.com/leasegate/leasegate/redislock"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	got := redislock.Config{ReplicaTimeout: 500 * time.Microsecond, FenceRetention: -time.Second}.Defaults()
	want := redislock.Config{FenceRetention: redislock.DefaultFenceRetention,
		ReplicaTimeout: redislock.DefaultReplicaTimeout, OpTimeout: redislock.DefaultOpTimeout}
	if got.FenceRetention != want.FenceRetention || got.ReplicaTimeout != want.ReplicaTimeout || got.OpTimeout != want.OpTimeout {
		t.Errorf("Defaults of unset durations: got %+v, want %+v", got, want)
	}
	set := redislock.Config{FenceRetention: time.Hour, ReplicaTimeout: time.Second, OpTimeout: time.Minute}
	if got := set.Defaults(); got.FenceRetention != time.Hour || got.ReplicaTimeout != time.Second || got.OpTimeout != time.Minute {
		t.Errorf("Defaults of set durations: got %+v, want them kept", got)
	}
}

func TestConfigChannels(t *testing.T) {
	t.Parallel()
	shard := func() string { return "lg:{r}:released" }
	for _, c := range []struct {
		name             string
		cfg              redislock.Config
		release, waitsOn string
	}{
		{"no channel publishes nothing", redislock.Config{}, "", ""},
		{"one channel is published, not subscribed per wait", redislock.Config{ReleaseChannel: "lg:released"}, "lg:released", ""},
		{"sharded releases use the shard channel", redislock.Config{ReleaseChannel: "lg:released", ShardedReleases: true}, shard(), shard()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.cfg.Channel(shard); got != c.release {
				t.Errorf("Channel: got %q, want %q", got, c.release)
			}
			if got := c.cfg.ShardChannel(shard); got != c.waitsOn {
				t.Errorf("ShardChannel: got %q, want %q", got, c.waitsOn)
			}
		})
	}
}
