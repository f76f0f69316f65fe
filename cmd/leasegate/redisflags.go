package main

import (
	"flag"

	"github.com/leasegate/leasegate/server"
)

// redisFlags binds the Redis deployment flags beside --redis-url
// (docs/configuration.md, docs/deployment.md).
func redisFlags(fs *flag.FlagSet, r *server.RedisConfig) {
	fs.StringVar(&r.SentinelMaster, "redis-sentinel-master", r.SentinelMaster, "Sentinel master name (with --redis-sentinel-addrs)")
	fs.Var(listFlag{p: &r.SentinelAddrs}, "redis-sentinel-addrs", "comma-separated host:port of the Sentinels")
	fs.StringVar(&r.SentinelUsername, "redis-sentinel-username", r.SentinelUsername, "username for the Sentinels themselves (ACL)")
	fs.StringVar(&r.SentinelPassword, "redis-sentinel-password", r.SentinelPassword, "password for the Sentinels themselves")
	fs.Var(listFlag{p: &r.ClusterAddrs}, "redis-cluster-addrs", "comma-separated host:port seeds of a Redis Cluster")
	fs.StringVar(&r.Username, "redis-username", r.Username, "Redis ACL username (overrides the URL's)")
	fs.StringVar(&r.Password, "redis-password", r.Password, "Redis password (overrides the URL's); prefer LEASEGATE_REDIS_PASSWORD to a flag")
	fs.BoolVar(&r.TLS, "redis-tls", r.TLS, "use TLS to Redis (implied by rediss:// and by the other --redis-tls-* flags)")
	fs.StringVar(&r.TLSCA, "redis-tls-ca", r.TLSCA, "PEM file of CA certificates to trust for Redis (default: system roots)")
	fs.StringVar(&r.TLSCert, "redis-tls-cert", r.TLSCert, "PEM client certificate for mutual TLS (with --redis-tls-key)")
	fs.StringVar(&r.TLSKey, "redis-tls-key", r.TLSKey, "PEM client key for mutual TLS (with --redis-tls-cert)")
	fs.StringVar(&r.TLSServerName, "redis-tls-server-name", r.TLSServerName, "name expected in Redis's certificate (default: the host dialled)")
	fs.BoolVar(&r.TLSInsecureSkipVerify, "redis-tls-insecure-skip-verify", r.TLSInsecureSkipVerify, "do NOT verify Redis's certificate (testing only; logged as a warning)")
	fs.IntVar(&r.MinReplicas, "min-replicas", r.MinReplicas, "replicas that must acknowledge (WAIT) each grant, else it is undone and the caller gets 503; 0 = off")
	fs.DurationVar(&r.MinReplicasTimeout, "min-replicas-timeout", r.MinReplicasTimeout, "how long each grant waits for --min-replicas acknowledgements")
	fs.DurationVar(&r.OutageGrace, "outage-grace", r.OutageGrace, "longest a call waits for a Redis node that does not answer before it is answered 503 and the node is taken as down (calls are then answered 503 at once until it answers a PING); 0 = never wait (a reply still gets 100ms)")
	fs.BoolVar(&r.AllowEviction, "allow-eviction", r.AllowEviction, "serve on a Redis whose maxmemory-policy may evict lock keys (a lock can then be granted twice); default: refuse to start, /readyz 503")
}
