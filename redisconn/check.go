package redisconn

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

// ErrEvicting: the Redis may evict lock keys (maxmemory with a
// maxmemory-policy other than noeviction) and --allow-eviction is not set.
var ErrEvicting = errors.New("redisconn: Redis may evict lock keys")

// The checks of the Redis deployment behind the gateway (docs/deployment.md):
//
//   - Eviction: with maxmemory set and any maxmemory-policy but noeviction,
//     a full Redis deletes keys. Every lease and fence key has a TTL, so the
//     volatile-* policies take them as surely as allkeys-*; an evicted lease
//     is granted again while its holder works. Refused at start and on
//     /readyz unless Config.AllowEviction.
//   - Persistence: without AOF a Redis restart forgets every lease and
//     fence (docs/fencing.md). A warning, once.
//
// Read with INFO, which the ACL user of docs/deployment.md may run and
// managed Redis services that disable CONFIG allow. Where INFO is
// refused, a warning, once, and no refusal. Every Cluster master is
// checked; with Sentinel, the master.

// check runs the checks before the gateway serves (not on the embedded
// Redis). A Redis that may evict refuses the start; one that cannot be
// reached does not: Ready answers an error until it can be reached, and
// checks it then.
func (c *Conn) check() error {
	if c.mini != nil {
		return nil
	}
	c.guard = newGuard(c.opts, c.Client, c.log)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.RequestTimeout)
	defer cancel()
	err := c.guard.check(ctx)
	if errors.Is(err, ErrEvicting) {
		return err
	}
	if err != nil {
		c.log.Error(fmt.Sprintf("Redis is not reachable at %s: the gateway starts anyway, answers 503 unavailable to lock requests and to /readyz until it is, and checks its settings then", c.opts.target()),
			zap.Error(err))
	}
	return nil
}

// target names the Redis the options point at, without credentials.
func (o Options) target() string {
	r := o.Redis
	switch o.Mode() {
	case "sentinel":
		return fmt.Sprintf("the Sentinel master %q (Sentinels %s)", r.SentinelMaster, strings.Join(r.SentinelAddrs, ", "))
	case "cluster":
		return "the Redis Cluster (seeds " + strings.Join(r.ClusterAddrs, ", ") + ")"
	case "single":
		if u, err := redis.ParseURL(o.URL); err == nil {
			return u.Addr
		}
	}
	return "the configured Redis"
}

// Ready is /readyz's question to Redis: it answers PING (Ping), and (not
// on the embedded Redis) no master it can reach may evict lock keys,
// unless that is allowed. It says what calls are told: 503, at once,
// while Redis is known down.
func (c *Conn) Ready(ctx context.Context) error {
	if err := c.ping(ctx); errors.Is(err, leasegate.ErrStoreDown) {
		return fmt.Errorf("%w: %w", &leasegate.Error{Code: leasegate.CodeUnavailable, RetryAfter: leasegate.DefaultRetryAfter,
			Message: "redis is known down: calls that need it are answered 503 at once until it answers again"}, err)
	} else if err != nil {
		return err
	}
	if c.guard == nil {
		return nil
	}
	if err := c.guard.check(ctx); errors.Is(err, ErrEvicting) {
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
	// unchecked: INFO was refused.
	unchecked error
}

func (n nodeSettings) evicts() bool {
	return n.unchecked == nil && n.maxmemory > 0 && n.policy != "noeviction"
}

// guard runs the checks; each warning is logged once per process.
type guard struct {
	rdb   redis.UniversalClient
	allow bool
	// name names a node in messages for clients that do not know their
	// address (Sentinel).
	name func(c *redis.Client) string
	log  *zap.Logger

	uncheckedOnce, evictOnce, aofOnce sync.Once
}

func newGuard(o Options, rdb redis.UniversalClient, log *zap.Logger) *guard {
	g := &guard{rdb: rdb, allow: o.Redis.AllowEviction, log: log}
	g.name = func(c *redis.Client) string { return c.Options().Addr }
	if o.Mode() == "sentinel" {
		master := o.Redis.SentinelMaster
		g.name = func(*redis.Client) string { return "the Sentinel master " + strconv.Quote(master) }
	}
	return g
}

// check reads every master's settings, logs the warnings not logged yet,
// and returns ErrEvicting (wrapped, with how to fix it) for a Redis
// that may evict unless that is allowed. Other errors mean a master could
// not be reached.
func (g *guard) check(ctx context.Context) error {
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
			g.log.Warn("could not check Redis's maxmemory-policy (INFO was refused): make sure it is noeviction, or a full Redis may evict lock keys and grant a lock twice (docs/deployment.md)",
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
				ErrEvicting, strings.Join(evicting, "; "))
		}
		g.evictOnce.Do(func() {
			g.log.Warn("Redis may evict lock keys when memory is full, and a lock may then be granted twice: --allow-eviction accepts that risk; set maxmemory-policy noeviction to remove it (docs/deployment.md)",
				zap.Strings("redis", evicting))
		})
	}
	return errors.Join(errs...)
}

// readSettings reads maxmemory, maxmemory-policy and appendonly from c's
// INFO (which the ACL user of docs/deployment.md may run, and managed
// services that disable CONFIG allow). A refusal (a Redis error reply) is
// reported in unchecked; a connection error is returned.
func readSettings(ctx context.Context, c *redis.Client) (nodeSettings, error) {
	var n nodeSettings
	text, err := c.Info(ctx, "memory").Result()
	if err == nil {
		var persistence string
		persistence, err = c.Info(ctx, "persistence").Result()
		text += "\n" + persistence
	}
	if re := redis.Error(nil); errors.As(err, &re) {
		return nodeSettings{unchecked: fmt.Errorf("INFO: %w", err)}, nil
	}
	if err != nil {
		return n, err
	}
	fields := infoFields(text)
	n.policy = fields["maxmemory_policy"]
	n.maxmemory, err = strconv.ParseInt(fields["maxmemory"], 10, 64)
	if err != nil || n.policy == "" {
		return n, fmt.Errorf("redisconn: INFO memory: no maxmemory and maxmemory_policy in %q", text)
	}
	n.aof = map[string]string{"1": "yes", "0": "no"}[fields["aof_enabled"]]
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
