package main

import (
	"flag"

	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/server"
)

// The serve flags of each area beside serveFlags' own (serve.go).

// redisFlags binds the Redis deployment flags beside --redis-url
// (docs/configuration.md, docs/deployment.md).
func redisFlags(fs *flag.FlagSet, r *redisconn.Config) {
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
	fs.IntVar(&r.MinReplicas, "min-replicas", r.MinReplicas, "replicas that must acknowledge (WAIT) each grant of a lock, lock set, election, semaphore permit or claim, else a new grant is undone (a renewal is left as it was) and the caller gets 503; 0 = off")
	fs.DurationVar(&r.MinReplicasTimeout, "min-replicas-timeout", r.MinReplicasTimeout, "how long each grant waits for --min-replicas acknowledgements")
	fs.DurationVar(&r.OutageGrace, "outage-grace", r.OutageGrace, "longest a call waits for a Redis node that does not answer before it is answered 503 and the node is taken as down (calls are then answered 503 at once until it answers a PING); 0 = never wait (a reply still gets 100ms)")
	fs.BoolVar(&r.AllowEviction, "allow-eviction", r.AllowEviction, "serve on a Redis whose maxmemory-policy may evict lock keys (a lock can then be granted twice); default: refuse to start, /readyz 503")
}

// authFlags binds the authentication and client-IP flags of serve.
func authFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.StringVar(&cfg.APIKeysFile, "api-keys-file", cfg.APIKeysFile, "file of API key entries name:role:tenant:sha256hex, one per line (docs/auth.md)")
	fs.StringVar(&cfg.APIKeys, "api-keys", cfg.APIKeys, "comma-separated API key entries name:role:tenant:sha256hex, added to --api-keys-file's")
	fs.BoolVar(&cfg.InsecureOpen, "insecure-open", cfg.InsecureOpen, "allow running without API keys on a non-loopback address (anyone who can connect is an operator)")
	fs.StringVar(&cfg.MetricsAuth, "metrics-auth", cfg.MetricsAuth, "who may read /metrics when keys are configured: ops (an ops key) or none (anyone)")
	fs.DurationVar(&cfg.OpsSessionTTL, "ops-session-ttl", cfg.OpsSessionTTL, "how long a browser login to the /ops/ page lasts (1m..168h)")
	fs.StringVar(&cfg.OpsSessionSecret, "ops-session-secret", cfg.OpsSessionSecret, "secret (at least 32 bytes) mixed into /ops/ session cookies so the key file alone cannot forge one; the same on every gateway; prefer LEASEGATE_OPS_SESSION_SECRET to the flag")
	fs.BoolVar(&cfg.HTTP.OpsSecureCookies, "ops-secure-cookies", cfg.HTTP.OpsSecureCookies, "mark the /ops/ page's cookies Secure on plain HTTP too (behind a TLS-terminating proxy); over TLS they always are")
	fs.Var(listFlag{p: &cfg.TrustedProxies}, "trusted-proxies", "comma-separated CIDRs or addresses of reverse proxies whose X-Forwarded-For is believed (default none: the peer address is the client)")
}

// webhookFlags binds the serve flags of abuse webhooks (docs/abuse.md).
func webhookFlags(fs *flag.FlagSet, cfg *server.Config) {
	// Repeatable: each value may hold several URLs, comma-separated (as
	// LEASEGATE_WEBHOOK_URL does), and values add up.
	fs.Var(listFlag{p: &cfg.Webhooks.URLs, add: true}, "webhook-url", "URL that receives every abuse event (flag, ban, unban, clear) and forced lock release (force-release) as a signed POST; repeatable, or comma-separated")
	fs.StringVar(&cfg.Webhooks.Secret, "webhook-secret", cfg.Webhooks.Secret, "secret (at least 16 bytes) that signs every webhook delivery (Leasegate-Signature); required with --webhook-url; prefer LEASEGATE_WEBHOOK_SECRET to the flag")
	fs.IntVar(&cfg.Webhooks.MaxAttempts, "webhook-max-attempts", cfg.Webhooks.MaxAttempts, "tries of one webhook event before it is dead-lettered")
	fs.DurationVar(&cfg.Webhooks.Timeout, "webhook-timeout", cfg.Webhooks.Timeout, "bound on one webhook POST")
}

// operatorFlags binds the flags of the operator tools (docs/operations.md).
func operatorFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.Var(listFlag{p: &cfg.LockClasses}, "lock-classes", "comma-separated resource prefixes that label the contention metrics (every other resource is _other)")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", cfg.AuditRetention, "how long audit records of operator actions are kept")
	fs.DurationVar(&cfg.IndexSweepInterval, "index-sweep-interval", cfg.IndexSweepInterval, "how often the lock index of each tenant is swept of ended leases (expiries and held locks are counted then)")
}
