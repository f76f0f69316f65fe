package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/leasegate/leasegate"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// ErrEvictingRedis: the Redis may evict lock keys (maxmemory with a
// maxmemory-policy other than noeviction) and --allow-eviction is not set.
var ErrEvictingRedis = errors.New("server: Redis may evict lock keys")

// The checks of the Redis deployment behind the gateway (docs/deployment.md):
//
//   - Eviction: with maxmemory set and any maxmemory-policy but noeviction,
//     a full Redis deletes keys. Every lease and fence key has a TTL, so the
//     volatile-* policies take them as surely as allkeys-*; an evicted lease
//     is granted again while its holder works. Refused at start and on
//     /readyz unless RedisConfig.AllowEviction.
//   - Persistence: without AOF a Redis restart forgets every lease and
//     fence (docs/fencing.md). A warning, once.
//
// Read with CONFIG GET, or INFO where CONFIG is refused (the ACL user of
// docs/deployment.md; managed Redis services that disable CONFIG). Where
// both are refused, a warning, once, and no refusal. Every Cluster master
// is checked; with Sentinel, the master.

// checkRedis runs the checks before the gateway serves (not on the
// embedded Redis). A Redis that may evict refuses the start; one that
// cannot be reached does not: /readyz answers 503 until it can be reached,
// and checks it then.
func (s *Server) checkRedis() error {
	if s.mini != nil {
		return nil
	}
	s.guard = newRedisGuard(s.cfg, s.rdb, s.log)
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.HTTP.RequestTimeout)
	defer cancel()
	err := s.guard.check(ctx)
	if errors.Is(err, ErrEvictingRedis) {
		return err
	}
	if err != nil {
		s.log.Error(fmt.Sprintf("Redis is not reachable at %s: the gateway starts anyway, answers 503 unavailable to lock requests and to /readyz until it is, and checks its settings then", s.cfg.redisTarget()),
			zap.Error(err))
	}
	return nil
}

// redisTarget names the Redis the config points at, without credentials.
func (c Config) redisTarget() string {
	r := c.Redis
	switch c.redisMode() {
	case "sentinel":
		return fmt.Sprintf("the Sentinel master %q (Sentinels %s)", r.SentinelMaster, strings.Join(r.SentinelAddrs, ", "))
	case "cluster":
		return "the Redis Cluster (seeds " + strings.Join(r.ClusterAddrs, ", ") + ")"
	case "single":
		if o, err := redis.ParseURL(c.RedisURL); err == nil {
			return o.Addr
		}
	}
	return "the configured Redis"
}

// ready is /readyz: not draining (drain.go), Redis answers PING
// (health.go), and (not on the embedded Redis) no master it can reach
// may evict lock keys, unless that is allowed. It says what calls are told: 503, at once, while Redis is
// known down.
func (s *Server) ready(ctx context.Context) error {
	if s.draining.Load() {
		return errDraining
	}
	if err := s.pingReady(ctx); errors.Is(err, leasegate.ErrStoreDown) {
		return fmt.Errorf("%w: %w", &leasegate.Error{Code: leasegate.CodeUnavailable, RetryAfter: leasegate.DefaultRetryAfter,
			Message: "redis is known down: calls that need it are answered 503 at once until it answers again"}, err)
	} else if err != nil {
		return err
	}
	if s.guard == nil {
		return nil
	}
	if err := s.guard.check(ctx); errors.Is(err, ErrEvictingRedis) {
		// What /readyz tells the load balancer and the operator; the
		// node and policy are in the log.
		return fmt.Errorf("%w: %w", &leasegate.Error{Code: leasegate.CodeUnavailable,
			Message:    "redis may evict lock keys (maxmemory with a policy other than noeviction): set noeviction or start with --allow-eviction",
			RetryAfter: leasegate.DefaultRetryAfter}, err)
	}
	return nil
}

// nodeSettings is what one master said about itself.
type nodeSettings struct {
	name      string
	maxmemory int64
	policy    string
	aof       string // "yes", "no", or "" when unknown
	// unchecked: both CONFIG GET and INFO were refused.
	unchecked error
}

func (n nodeSettings) evicts() bool {
	return n.unchecked == nil && n.maxmemory > 0 && n.policy != "noeviction"
}

// redisGuard runs the checks; each warning is logged once per process.
type redisGuard struct {
	rdb   redis.UniversalClient
	allow bool
	// name names a node in messages for clients that do not know their
	// address (Sentinel).
	name func(c *redis.Client) string
	log  *zap.Logger

	uncheckedOnce, evictOnce, aofOnce sync.Once
}

func newRedisGuard(cfg Config, rdb redis.UniversalClient, log *zap.Logger) *redisGuard {
	g := &redisGuard{rdb: rdb, allow: cfg.Redis.AllowEviction, log: log}
	g.name = func(c *redis.Client) string { return c.Options().Addr }
	if cfg.redisMode() == "sentinel" {
		master := cfg.Redis.SentinelMaster
		g.name = func(*redis.Client) string { return "the Sentinel master " + strconv.Quote(master) }
	}
	return g
}

// check reads every master's settings, logs the warnings not logged yet,
// and returns ErrEvictingRedis (wrapped, with how to fix it) for a Redis
// that may evict unless that is allowed. Other errors mean a master could
// not be reached.
func (g *redisGuard) check(ctx context.Context) error {
	var mu sync.Mutex
	var nodes []nodeSettings
	var errs []error
	each := func(ctx context.Context, c *redis.Client) error {
		n, err := readSettings(ctx, c)
		n.name = g.name(c)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", n.name, err))
		} else {
			nodes = append(nodes, n)
		}
		return nil
	}
	switch c := g.rdb.(type) {
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, each); err != nil {
			return err
		}
	case *redis.Client:
		_ = each(ctx, c)
	}
	var evicting, unchecked, noAOF []string
	var why error
	for _, n := range nodes {
		switch {
		case n.unchecked != nil:
			unchecked = append(unchecked, n.name)
			why = n.unchecked
		case n.evicts():
			evicting = append(evicting, fmt.Sprintf("%s has maxmemory %d and maxmemory-policy %s", n.name, n.maxmemory, n.policy))
		}
		if n.aof == "no" {
			noAOF = append(noAOF, n.name)
		}
	}
	if len(unchecked) > 0 {
		g.uncheckedOnce.Do(func() {
			g.log.Warn("could not check Redis's maxmemory-policy (CONFIG GET and INFO were refused): make sure it is noeviction, or a full Redis may evict lock keys and grant a lock twice (docs/deployment.md)",
				zap.Strings("redis", unchecked), zap.Error(why))
		})
	}
	if len(noAOF) > 0 {
		g.aofOnce.Do(func() {
			g.log.Warn("Redis runs with appendonly no: fencing tokens and leases do not survive a Redis restart without persistence; turn on AOF (appendonly yes, appendfsync always) (docs/fencing.md, docs/deployment.md)",
				zap.Strings("redis", noAOF))
		})
	}
	if len(evicting) > 0 {
		if !g.allow {
			return fmt.Errorf("%w: %s, so when memory is full Redis deletes keys, lease and fence keys included (they all carry TTLs, so volatile-* policies take them too), and the same lock can be granted twice; set maxmemory-policy noeviction on it (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or pass --allow-eviction (LEASEGATE_ALLOW_EVICTION=true) to accept the risk",
				ErrEvictingRedis, strings.Join(evicting, "; "))
		}
		g.evictOnce.Do(func() {
			g.log.Warn("Redis may evict lock keys when memory is full, and a lock may then be granted twice: --allow-eviction accepts that risk; set maxmemory-policy noeviction to remove it (docs/deployment.md)",
				zap.Strings("redis", evicting))
		})
	}
	return errors.Join(errs...)
}

// readSettings reads maxmemory, maxmemory-policy and appendonly from c,
// with CONFIG GET or else INFO. A refusal of both (a Redis error reply) is
// reported in unchecked; a connection error is returned.
func readSettings(ctx context.Context, c *redis.Client) (nodeSettings, error) {
	n, cerr := readConfig(ctx, c)
	if cerr == nil {
		return n, nil
	}
	if !isReply(cerr) {
		return n, cerr
	}
	n, ierr := readInfo(ctx, c)
	if ierr == nil {
		return n, nil
	}
	if !isReply(ierr) {
		return n, ierr
	}
	return nodeSettings{unchecked: fmt.Errorf("CONFIG GET: %w; INFO: %w", cerr, ierr)}, nil
}

// isReply: err is an error reply from Redis (NOPERM, unknown command),
// not a failure to reach it.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func readConfig(ctx context.Context, c *redis.Client) (nodeSettings, error) {
	var n nodeSettings
	get := func(param string) (string, error) {
		m, err := c.ConfigGet(ctx, param).Result()
		if err != nil {
			return "", err
		}
		return m[param], nil
	}
	mm, err := get("maxmemory")
	if err != nil {
		return n, err
	}
	if n.policy, err = get("maxmemory-policy"); err != nil {
		return n, err
	}
	if n.aof, err = get("appendonly"); err != nil {
		return n, err
	}
	n.maxmemory, err = strconv.ParseInt(mm, 10, 64)
	if err != nil || n.policy == "" {
		return n, fmt.Errorf("server: CONFIG GET maxmemory: unexpected %q, %q", mm, n.policy)
	}
	return n, nil
}

func readInfo(ctx context.Context, c *redis.Client) (nodeSettings, error) {
	var n nodeSettings
	text, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return n, err
	}
	persistence, err := c.Info(ctx, "persistence").Result()
	if err != nil {
		return n, err
	}
	fields := infoFields(text + "\n" + persistence)
	n.policy = fields["maxmemory_policy"]
	n.maxmemory, err = strconv.ParseInt(fields["maxmemory"], 10, 64)
	if err != nil || n.policy == "" {
		return n, fmt.Errorf("server: INFO memory: no maxmemory and maxmemory_policy in %q", text)
	}
	switch fields["aof_enabled"] {
	case "1":
		n.aof = "yes"
	case "0":
		n.aof = "no"
	}
	return n, nil
}

// infoFields parses INFO's "key:value" lines.
func infoFields(text string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}
