package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/server"
)

func TestRedisFlags(t *testing.T) {
	t.Parallel()
	parse := func(t *testing.T, args []string, env map[string]string) server.Config {
		t.Helper()
		cfg := server.DefaultConfig()
		level := "info"
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveFlags(fs, &cfg, &level)
		if err := parseFlags(fs, args, func(k string) string { return env[k] }, io.Discard); err != nil {
			t.Fatalf("parse: %v", err)
		}
		return cfg
	}

	t.Run("Sentinel settings come from the environment, lists split on commas", func(t *testing.T) {
		cfg := parse(t, nil, map[string]string{
			"LEASEGATE_REDIS_SENTINEL_MASTER":   "m",
			"LEASEGATE_REDIS_SENTINEL_ADDRS":    "s1:26379, s2:26379,,s3:26379",
			"LEASEGATE_REDIS_SENTINEL_PASSWORD": "sp",
			"LEASEGATE_MIN_REPLICAS":            "1",
			"LEASEGATE_MIN_REPLICAS_TIMEOUT":    "250ms",
		})
		want := []string{"s1:26379", "s2:26379", "s3:26379"}
		if cfg.Redis.SentinelMaster != "m" || !slices.Equal(cfg.Redis.SentinelAddrs, want) || cfg.Redis.SentinelPassword != "sp" {
			t.Fatalf("got %+v, want master m, addrs %v, sentinel password sp", cfg.Redis, want)
		}
		if cfg.Redis.MinReplicas != 1 || cfg.Redis.MinReplicasTimeout != 250*time.Millisecond {
			t.Fatalf("min-replicas: got %d / %v, want 1 / 250ms", cfg.Redis.MinReplicas, cfg.Redis.MinReplicasTimeout)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
	})

	t.Run("a flag replaces the environment's list", func(t *testing.T) {
		cfg := parse(t, []string{"--redis-cluster-addrs", "c9:7000"}, map[string]string{"LEASEGATE_REDIS_CLUSTER_ADDRS": "c1:7000,c2:7000"})
		if !slices.Equal(cfg.Redis.ClusterAddrs, []string{"c9:7000"}) {
			t.Fatalf("cluster addrs: got %v, want [c9:7000]", cfg.Redis.ClusterAddrs)
		}
	})

	t.Run("the defaults are off", func(t *testing.T) {
		cfg := parse(t, nil, nil)
		if cfg.Redis.MinReplicas != 0 || cfg.Redis.MinReplicasTimeout != redisconn.DefaultMinReplicasTimeout || cfg.Redis.TLS {
			t.Fatalf("got %+v, want min-replicas 0, timeout %v, no TLS", cfg.Redis, redisconn.DefaultMinReplicasTimeout)
		}
	})

	t.Run("serve refuses a URL and a Cluster together before connecting", func(t *testing.T) {
		var stderr bytes.Buffer
		env := map[string]string{"LEASEGATE_REDIS_CLUSTER_ADDRS": "127.0.0.1:1"}
		code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--redis-url", "redis://127.0.0.1:1"}, nil, io.Discard, &stderr,
			func(k string) string { return env[k] })
		if code != 2 || !strings.Contains(stderr.String(), "only one of") {
			t.Fatalf("got exit %d (%s), want 2 naming the conflict", code, stderr.String())
		}
	})
}
