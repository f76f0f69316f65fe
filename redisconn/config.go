package redisconn

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Config is how the gateway reaches a real Redis deployment, beside
// Options.URL (single node). Exactly one of URL, SentinelMaster (with
// SentinelAddrs) or ClusterAddrs may be set; none of them runs the
// embedded in-memory Redis. See docs/deployment.md.
type Config struct {
	// SentinelMaster is the master name Sentinel monitors; with
	// SentinelAddrs the gateway follows that master across failovers.
	SentinelMaster string
	// SentinelAddrs are host:port of the Sentinels.
	SentinelAddrs []string
	// SentinelUsername / SentinelPassword authenticate to the Sentinels
	// themselves (their requirepass / ACL), not to the data nodes.
	SentinelUsername string
	SentinelPassword string
	// ClusterAddrs are host:port seeds of a Redis Cluster.
	ClusterAddrs []string

	// Username and Password authenticate to the data nodes (Redis ACL).
	// They override a username/password given in the URL.
	Username string
	Password string

	// TLS turns TLS on (a rediss:// URL does too).
	TLS bool
	// TLSCA is a PEM file of CA certificates to trust instead of the
	// system pool.
	TLSCA string
	// TLSCert and TLSKey are a PEM client certificate and key (mutual TLS).
	TLSCert string
	TLSKey  string
	// TLSServerName is the name checked in the server's certificate
	// (default: the host dialled).
	TLSServerName string
	// TLSInsecureSkipVerify accepts any server certificate. Testing only.
	TLSInsecureSkipVerify bool

	// MinReplicas, when above 0, makes every grant wait (Redis WAIT) until
	// that many replicas have it; otherwise the grant is undone and the
	// caller gets 503. See redislock.Config.MinReplicas.
	MinReplicas int
	// MinReplicasTimeout bounds that wait.
	MinReplicasTimeout time.Duration

	// AllowEviction accepts a Redis that may evict keys (maxmemory with a
	// maxmemory-policy other than noeviction): the gateway then starts and
	// is ready with a warning instead of refusing. See docs/deployment.md.
	AllowEviction bool

	// OutageGrace is how long one call waits for a Redis node that does
	// not answer (a connection that does not open, a reply that does not
	// come) before it is answered 503 and the node is known down; calls
	// then get 503 at once until the node answers a PING again
	// (internal/storehealth, docs/operations.md). A refused or reset
	// connection needs no waiting: it takes the node down at once. 0
	// waits as little as a reply can: MinReplyWindow.
	OutageGrace time.Duration
}

// DefaultMinReplicasTimeout is the default of --min-replicas-timeout.
const DefaultMinReplicasTimeout = 100 * time.Millisecond

// DefaultOutageGrace is the default of --outage-grace.
const DefaultOutageGrace = time.Second

// MinReplyWindow is the least time a Redis call is given for its reply,
// whatever --outage-grace says: Redis answers the gateway's scripts in
// well under a millisecond, and one this late is taken for a node that
// has stopped.
const MinReplyWindow = 100 * time.Millisecond

// Options say which Redis the gateway uses and how long a call may take.
type Options struct {
	// URL is a redis:// or rediss:// URL of a single node.
	URL   string
	Redis Config
	// EmbeddedAddr is where the embedded Redis listens when URL and the
	// other Redis settings are empty (default DefaultEmbeddedAddr);
	// loopback only.
	EmbeddedAddr string
	// TestClock lets AdvanceClock move the embedded store's clock; it is
	// refused with any real Redis.
	TestClock bool
	// RequestTimeout bounds one request's Redis work (--request-timeout).
	RequestTimeout time.Duration
}

// Mode names the deployment the options select: "sentinel", "cluster",
// "single" or "embedded".
func (o Options) Mode() string {
	switch {
	case o.Redis.SentinelMaster != "" || len(o.Redis.SentinelAddrs) > 0:
		return "sentinel"
	case len(o.Redis.ClusterAddrs) > 0:
		return "cluster"
	case o.URL != "":
		return "single"
	}
	return "embedded"
}

// Validate reports every inconsistency of the Redis settings.
func (o Options) Validate() []error {
	r := o.Redis
	var errs []error
	set := 0
	if o.URL != "" {
		set++
	}
	if r.SentinelMaster != "" || len(r.SentinelAddrs) > 0 {
		set++
	}
	if len(r.ClusterAddrs) > 0 {
		set++
	}
	if set > 1 {
		errs = append(errs, errors.New("set only one of --redis-url, --redis-sentinel-master/--redis-sentinel-addrs, --redis-cluster-addrs"))
	}
	if o.URL != "" && !strings.HasPrefix(o.URL, "redis://") && !strings.HasPrefix(o.URL, "rediss://") {
		errs = append(errs, errors.New("redis-url must start with redis:// or rediss://"))
	}
	if r.SentinelMaster != "" && len(r.SentinelAddrs) == 0 {
		errs = append(errs, errors.New("redis-sentinel-master needs --redis-sentinel-addrs"))
	}
	if len(r.SentinelAddrs) > 0 && r.SentinelMaster == "" {
		errs = append(errs, errors.New("redis-sentinel-addrs needs --redis-sentinel-master"))
	}
	if (r.SentinelUsername != "" || r.SentinelPassword != "") && len(r.SentinelAddrs) == 0 {
		errs = append(errs, errors.New("redis-sentinel-username/password need --redis-sentinel-addrs"))
	}
	for _, a := range append(append([]string(nil), r.SentinelAddrs...), r.ClusterAddrs...) {
		if a == "" || !strings.Contains(a, ":") {
			errs = append(errs, fmt.Errorf("redis address %q is not host:port", a))
		}
	}
	if (r.TLSCert == "") != (r.TLSKey == "") {
		errs = append(errs, errors.New("redis-tls-cert and redis-tls-key go together"))
	}
	if r.MinReplicas < 0 {
		errs = append(errs, errors.New("min-replicas must not be negative"))
	}
	if r.MinReplicas > 0 && r.MinReplicasTimeout <= 0 {
		errs = append(errs, errors.New("min-replicas-timeout must be positive"))
	}
	if r.OutageGrace < 0 {
		errs = append(errs, errors.New("outage-grace must not be negative"))
	}
	if addr := cmp.Or(o.EmbeddedAddr, DefaultEmbeddedAddr); set == 0 && !IsLoopback(addr) {
		errs = append(errs, fmt.Errorf("embedded-redis-addr %q: the embedded Redis listens on a loopback address only (host:port, e.g. 127.0.0.1:6390)", addr))
	}
	if set == 0 {
		tlsSet := r.TLS || r.TLSCA != "" || r.TLSCert != "" || r.TLSServerName != "" || r.TLSInsecureSkipVerify
		if tlsSet || r.Username != "" || r.Password != "" {
			errs = append(errs, errors.New("redis TLS and credential flags need --redis-url, --redis-sentinel-* or --redis-cluster-addrs"))
		}
		if r.MinReplicas > 0 {
			errs = append(errs, errors.New("min-replicas needs a real Redis with replicas, not the embedded one"))
		}
	} else if o.TestClock {
		errs = append(errs, errors.New("embedded-redis-test-clock is for tests on the embedded store only: a real Redis's clock cannot be moved (drop --redis-url, --redis-sentinel-* and --redis-cluster-addrs)"))
	}
	return errs
}

// NewClient builds the go-redis client for validated options: a
// *redis.Client for a URL, a Sentinel-backed failover *redis.Client, or a
// *redis.ClusterClient. It does not dial; the first command does.
func NewClient(o Options) (redis.UniversalClient, error) {
	r := o.Redis
	switch o.Mode() {
	case "single":
		opts, err := redis.ParseURL(o.URL)
		if err != nil {
			return nil, fmt.Errorf("redisconn: --redis-url: %w", err)
		}
		if r.Username != "" {
			opts.Username = r.Username
		}
		if r.Password != "" {
			opts.Password = r.Password
		}
		tc, err := r.tlsConfig(opts.TLSConfig)
		if err != nil {
			return nil, err
		}
		opts.TLSConfig = tc
		to := o.clientTimeouts()
		opts.DialerRetries = 1 // a failed dial is an outage (storehealth), not retried
		// A timeout given in the URL (?read_timeout=...) is the operator's.
		opts.DialTimeout = keep(opts.DialTimeout, to.dial)
		opts.ReadTimeout = keep(opts.ReadTimeout, to.read)
		opts.WriteTimeout = keep(opts.WriteTimeout, to.write)
		opts.PoolTimeout = keep(opts.PoolTimeout, to.pool)
		opts.ContextTimeoutEnabled = true
		opts.MaxRetries = noRetries
		return redis.NewClient(opts), nil
	case "sentinel":
		tc, err := r.tlsConfig(nil)
		if err != nil {
			return nil, err
		}
		to := o.clientTimeouts()
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:            r.SentinelMaster,
			SentinelAddrs:         r.SentinelAddrs,
			SentinelUsername:      r.SentinelUsername,
			SentinelPassword:      r.SentinelPassword,
			Username:              r.Username,
			Password:              r.Password,
			TLSConfig:             tc,
			DialTimeout:           to.dial,
			DialerRetries:         1,
			ReadTimeout:           to.read,
			WriteTimeout:          to.write,
			PoolTimeout:           to.pool,
			ContextTimeoutEnabled: true,
			MaxRetries:            noRetries,
		}), nil
	case "cluster":
		tc, err := r.tlsConfig(nil)
		if err != nil {
			return nil, err
		}
		to := o.clientTimeouts()
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                 r.ClusterAddrs,
			Username:              r.Username,
			Password:              r.Password,
			TLSConfig:             tc,
			DialerRetries:         1,
			DialTimeout:           to.dial,
			ReadTimeout:           to.read,
			WriteTimeout:          to.write,
			PoolTimeout:           to.pool,
			ContextTimeoutEnabled: true,
			MaxRetries:            noRetries,
			// The cluster client's own loop re-sends on a lost connection
			// too; with no redirects a MOVED or ASK is an error (503) that
			// reloads the slot map, and the caller's retry goes to the
			// right node.
			MaxRedirects: noRetries,
		}), nil
	}
	return nil, errors.New("redisconn: no Redis configured")
}

// noRetries turns off go-redis's re-sending of a command whose reply was
// lost (EOF, read timeout): the script may already have run, and running
// a release or a user-lock attempt twice changes its answer (a release
// that worked answers "not found"; an attempt is counted twice). A lost
// reply is a 503 instead, and the caller decides: acquire and renew are
// idempotent for the same owner, and a release retried after a 503 that
// finds nothing means the first one worked (docs/api.md).
const noRetries = -1

// clientTimeouts are the go-redis client's own timeouts. A call waits
// for a node that does not answer (no connection, no reply) at most the
// outage grace, and never longer than --request-timeout, after which the
// node is known down (storehealth) and later calls are answered at once;
// a request's work is bounded by --request-timeout all the same. The
// client also honours each call's context deadline
// (ContextTimeoutEnabled), which is how a waiting acquire bounds its
// calls by what is left of wait_ms (redislock.Waiter).
type clientTimeouts struct {
	// dial bounds opening one connection (TCP connect, TLS handshake).
	dial              time.Duration
	read, write, pool time.Duration
}

func (o Options) clientTimeouts() clientTimeouts {
	rt := o.RequestTimeout
	if rt <= 0 {
		rt = defaultRedisTimeout
	}
	window := min(max(o.Redis.OutageGrace, MinReplyWindow), rt)
	read := window
	// WAIT in a grant's pipeline is read with the connection's read
	// timeout: it may take --min-replicas-timeout on top.
	if o.Redis.MinReplicas > 0 {
		read += o.Redis.MinReplicasTimeout
	}
	return clientTimeouts{dial: window, read: read, write: window, pool: rt}
}

// defaultRedisTimeout is --request-timeout's default, for a
// Config not made by DefaultConfig.
const defaultRedisTimeout = 5 * time.Second

// keep returns cur when it is set (a URL parameter), else def.
func keep(cur, def time.Duration) time.Duration {
	if cur != 0 {
		return cur
	}
	return def
}

// tlsConfig returns the TLS settings to use, or nil for plain TCP. base is
// what a rediss:// URL already asked for.
func (r Config) tlsConfig(base *tls.Config) (*tls.Config, error) {
	on := base != nil || r.TLS || r.TLSCA != "" || r.TLSCert != "" || r.TLSServerName != "" || r.TLSInsecureSkipVerify
	if !on {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if base != nil {
		tc = base.Clone()
		if tc.MinVersion < tls.VersionTLS12 {
			tc.MinVersion = tls.VersionTLS12
		}
	}
	if r.TLSCA != "" {
		pem, err := os.ReadFile(r.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("redisconn: --redis-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redisconn: --redis-tls-ca: no PEM certificate in %s", r.TLSCA)
		}
		tc.RootCAs = pool
	}
	if r.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(r.TLSCert, r.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("redisconn: --redis-tls-cert/--redis-tls-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if r.TLSServerName != "" {
		tc.ServerName = r.TLSServerName
	}
	tc.InsecureSkipVerify = r.TLSInsecureSkipVerify
	return tc, nil
}

// logRedis says at start which deployment the gateway uses, and warns
// loudly about settings that weaken it. No secret is logged.
func logRedis(o Options, log *zap.Logger) {
	r := o.Redis
	fields := []zap.Field{zap.String("redis_mode", o.Mode())}
	switch o.Mode() {
	case "sentinel":
		fields = append(fields, zap.String("sentinel_master", r.SentinelMaster), zap.Strings("sentinel_addrs", r.SentinelAddrs))
	case "cluster":
		fields = append(fields, zap.Strings("cluster_addrs", r.ClusterAddrs))
	}
	if r.MinReplicas > 0 {
		fields = append(fields, zap.Int("min_replicas", r.MinReplicas), zap.Duration("min_replicas_timeout", r.MinReplicasTimeout))
	}
	log.Info("redis", fields...)
	if r.TLSInsecureSkipVerify {
		log.Warn("--redis-tls-insecure-skip-verify is set: the Redis server's certificate is NOT checked, so anyone on the network path can impersonate Redis and read or forge every lock; use it only for testing")
	}
}
