package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/server"
)

// capture is a logger whose JSON lines a test reads back.
func capture(t *testing.T) (*zap.Logger, *logtest.Buffer) {
	t.Helper()
	lb := &logtest.Buffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel)
	return zap.New(core), lb
}

// warnings are the warn-level records whose message contains snippet.
func warnings(t *testing.T, lb *logtest.Buffer, snippet string) []map[string]any {
	t.Helper()
	return records(t, lb, "warn", snippet)
}

// records are the records at level whose message contains snippet.
func records(t *testing.T, lb *logtest.Buffer, level, snippet string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range lb.Records(t) {
		if msg, _ := r["msg"].(string); r["level"] == level && strings.Contains(msg, snippet) {
			out = append(out, r)
		}
	}
	return out
}

// startOn builds a server for a single Redis at url with log.
func startOn(t *testing.T, url string, log *zap.Logger, mutate func(*server.Config)) (*server.Server, error) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = url
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := server.New(cfg, log)
	if err == nil {
		t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	}
	return s, err
}

// configSet runs CONFIG SET on c, failing the test on an error.
func configSet(t *testing.T, c *redis.Client, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := c.ConfigSet(context.Background(), kv[i], kv[i+1]).Err(); err != nil {
			t.Fatalf("CONFIG SET %s %s: %v", kv[i], kv[i+1], err)
		}
	}
}

// wantEvictionRefusal checks err is the documented refusal naming policy.
func wantEvictionRefusal(t *testing.T, err error, policy string) {
	t.Helper()
	if !errors.Is(err, redisconn.ErrEvicting) {
		t.Fatalf("got %v, want redisconn.ErrEvicting", err)
	}
	for _, want := range []string{"maxmemory-policy " + policy, "noeviction", "--allow-eviction", "LEASEGATE_ALLOW_EVICTION"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestARedisThatMayEvictLockKeysIsRefused: with maxmemory set and any
// policy but noeviction, Redis may delete lease and fence keys (they all
// carry TTLs, so volatile-* policies take them too) and a lock can be
// granted twice. The gateway refuses to start on it, unless told to
// accept the risk, and /readyz says 503 if it turns so later.
func TestARedisThatMayEvictLockKeysIsRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru")
	admin := srv.Client(t)

	t.Run("start refuses allkeys-lru and says how to fix it", func(t *testing.T) {
		_, err := startOn(t, srv.URL(), nil, nil)
		wantEvictionRefusal(t, err, "allkeys-lru")
		if !strings.Contains(err.Error(), srv.Addr()) {
			t.Errorf("error %q does not name the Redis %s", err, srv.Addr())
		}
	})

	for _, policy := range []string{"volatile-lru", "volatile-ttl", "allkeys-random"} {
		t.Run("start refuses "+policy, func(t *testing.T) {
			configSet(t, admin, "maxmemory-policy", policy)
			t.Cleanup(func() { configSet(t, admin, "maxmemory-policy", "allkeys-lru") })
			_, err := startOn(t, srv.URL(), nil, nil)
			wantEvictionRefusal(t, err, policy)
		})
	}

	t.Run("with --allow-eviction it serves and warns once", func(t *testing.T) {
		log, lb := capture(t)
		s, err := startOn(t, srv.URL(), log, func(c *server.Config) { c.Redis.AllowEviction = true })
		if err != nil {
			t.Fatalf("server.New with AllowEviction: %v", err)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/evict-1", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Errorf("POST /locks/evict-1: got %d, want 200", code)
		}
		for range 3 {
			if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
				t.Errorf("GET /readyz: got %d, want 200", code)
			}
		}
		if got := warnings(t, lb, "may evict"); len(got) != 1 {
			t.Errorf("got %d eviction warnings, want 1: %v", len(got), lb.Records(t))
		}
	})

	t.Run("maxmemory 0 (no limit) never evicts and serves", func(t *testing.T) {
		configSet(t, admin, "maxmemory", "0")
		t.Cleanup(func() { configSet(t, admin, "maxmemory", "100mb") })
		log, lb := capture(t)
		s, err := startOn(t, srv.URL(), log, nil)
		if err != nil {
			t.Fatalf("server.New: %v", err)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
			t.Errorf("GET /readyz: got %d, want 200", code)
		}
		if got := warnings(t, lb, "evict"); len(got) != 0 {
			t.Errorf("got eviction warnings %v, want none", got)
		}
	})

	t.Run("noeviction serves, and /readyz is 503 while the policy evicts", func(t *testing.T) {
		configSet(t, admin, "maxmemory-policy", "noeviction")
		t.Cleanup(func() { configSet(t, admin, "maxmemory-policy", "allkeys-lru") })
		log, lb := capture(t)
		s, err := startOn(t, srv.URL(), log, nil)
		if err != nil {
			t.Fatalf("server.New on noeviction: %v", err)
		}
		if got := warnings(t, lb, "evict"); len(got) != 0 {
			t.Errorf("got eviction warnings %v, want none", got)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/evict-2", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Errorf("POST /locks/evict-2: got %d, want 200", code)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
			t.Errorf("GET /readyz on noeviction: got %d, want 200", code)
		}
		configSet(t, admin, "maxmemory-policy", "volatile-lru")
		if p := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").Problem(t, http.StatusServiceUnavailable, "unavailable"); !strings.Contains(p.Detail, "noeviction") {
			t.Errorf("GET /readyz on volatile-lru: got detail %q, want it to say why (evicting policy) and how to fix it", p.Detail)
		}
		configSet(t, admin, "maxmemory-policy", "noeviction")
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
			t.Errorf("GET /readyz back on noeviction: got %d, want 200", code)
		}
	})
}

// TestAnUncheckableRedisPolicyIsAWarningNotARefusal: the ACL user
// docs/deployment.md recommends has no CONFIG; the gateway reads the
// policy from INFO; a user refused INFO gets a warning, once, that the
// policy could not be checked, and the gateway serves.
func TestAnUncheckableRedisPolicyIsAWarningNotARefusal(t *testing.T) {
	t.Parallel()
	srv := startWithACLUser(t)
	admin := srv.Client(t)
	ctx := context.Background()
	// The recommended user, less INFO.
	var args []interface{}
	for _, f := range strings.Fields(strings.Replace(strings.Replace(aclLine(t),
		"SETUSER leasegate ", "SETUSER noinfo ", 1), ">CHANGE-ME", ">s3cret", 1)) {
		args = append(args, f)
	}
	args = append(args, "-info")
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatalf("ACL SETUSER noinfo: %v", err)
	}
	configSet(t, admin, "maxmemory", "100mb", "maxmemory-policy", "allkeys-lru")

	t.Run("without CONFIG and INFO it warns once and serves", func(t *testing.T) {
		log, lb := capture(t)
		s, err := startOn(t, "redis://noinfo:s3cret@"+srv.Addr(), log, nil)
		if err != nil {
			t.Fatalf("server.New as a user without CONFIG and INFO: got %v, want it to start", err)
		}
		for range 3 {
			if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
				t.Errorf("GET /readyz: got %d, want 200", code)
			}
		}
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/acl-evict", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Errorf("POST /locks/acl-evict: got %d, want 200", code)
		}
		got := warnings(t, lb, "could not check")
		if len(got) != 1 {
			t.Fatalf("got %d could-not-check warnings, want 1: %v", len(got), lb.Records(t))
		}
		if !strings.Contains(got[0]["msg"].(string), "noeviction") {
			t.Errorf("warning %q does not say what to make sure of (noeviction)", got[0]["msg"])
		}
	})

	t.Run("the recommended user, without CONFIG, reads the policy from INFO", func(t *testing.T) {
		_, err := startOn(t, "redis://leasegate:s3cret@"+srv.Addr(), nil, nil)
		wantEvictionRefusal(t, err, "allkeys-lru")
	})
}

// TestARedisWithoutAOFIsAWarning: without persistence a Redis restart
// forgets every lease and fence; the gateway says so once at start.
func TestARedisWithoutAOFIsAWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"appendonly no warns once", nil, 1},
		{"appendonly yes does not warn", []string{"--appendonly", "yes"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t, tc.args...)
			log, lb := capture(t)
			s, err := startOn(t, srv.URL(), log, nil)
			if err != nil {
				t.Fatalf("server.New: %v", err)
			}
			for range 2 {
				apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "")
			}
			got := warnings(t, lb, "appendonly no")
			if len(got) != tc.want {
				t.Fatalf("got %d AOF warnings, want %d: %v", len(got), tc.want, lb.Records(t))
			}
			if tc.want == 1 && !strings.Contains(got[0]["msg"].(string), "docs/fencing.md") {
				t.Errorf("warning %q does not point to docs/fencing.md", got[0]["msg"])
			}
		})
	}
}

func TestEvictionIsCheckedOnEveryClusterMaster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	last := cl.Nodes[len(cl.Nodes)-1]
	configSet(t, last.Client(t), "maxmemory", "100mb", "maxmemory-policy", "volatile-lru")
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.ClusterAddrs = cl.Addrs()[:1] // the evicting master is found, not given
	s, err := server.New(cfg, nil)
	if err == nil {
		_ = s.Shutdown(context.Background())
	}
	wantEvictionRefusal(t, err, "volatile-lru")
	if !strings.Contains(err.Error(), last.Addr()) {
		t.Errorf("error %q does not name the evicting master %s", err, last.Addr())
	}
}

func TestEvictionIsCheckedOnTheSentinelMaster(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t)
	configSet(t, sn.Primary.Client(t), "maxmemory", "100mb", "maxmemory-policy", "allkeys-lfu")
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.SentinelMaster = sn.MasterName
	cfg.Redis.SentinelAddrs = sn.Addrs()
	s, err := server.New(cfg, nil)
	if err == nil {
		_ = s.Shutdown(context.Background())
	}
	wantEvictionRefusal(t, err, "allkeys-lfu")
}
