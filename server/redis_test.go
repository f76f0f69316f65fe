package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/server"
)

func TestRedisConfigValidate(t *testing.T) {
	t.Parallel()
	with := func(f func(c *server.Config)) server.Config {
		c := server.DefaultConfig()
		f(&c)
		return c
	}
	bad := []struct {
		name string
		cfg  server.Config
		want string
	}{
		{"a URL and Sentinel together are refused", with(func(c *server.Config) {
			c.RedisURL = "redis://r:6379"
			c.Redis.SentinelMaster, c.Redis.SentinelAddrs = "m", []string{"s:26379"}
		}), "only one of"},
		{"a URL and Cluster together are refused", with(func(c *server.Config) {
			c.RedisURL = "redis://r:6379"
			c.Redis.ClusterAddrs = []string{"c:7000"}
		}), "only one of"},
		{"Sentinel and Cluster together are refused", with(func(c *server.Config) {
			c.Redis.SentinelMaster, c.Redis.SentinelAddrs = "m", []string{"s:26379"}
			c.Redis.ClusterAddrs = []string{"c:7000"}
		}), "only one of"},
		{"a Sentinel master needs Sentinel addresses", with(func(c *server.Config) {
			c.Redis.SentinelMaster = "m"
		}), "needs --redis-sentinel-addrs"},
		{"Sentinel addresses need a master name", with(func(c *server.Config) {
			c.Redis.SentinelAddrs = []string{"s:26379"}
		}), "needs --redis-sentinel-master"},
		{"an address without a port is refused", with(func(c *server.Config) {
			c.Redis.ClusterAddrs = []string{"c"}
		}), "not host:port"},
		{"a URL of another scheme is refused", with(func(c *server.Config) {
			c.RedisURL = "http://r:6379"
		}), "redis:// or rediss://"},
		{"a client certificate needs its key", with(func(c *server.Config) {
			c.RedisURL = "rediss://r:6379"
			c.Redis.TLSCert = "c.pem"
		}), "go together"},
		{"TLS settings need a real Redis", with(func(c *server.Config) {
			c.Redis.TLSCA = "ca.pem"
		}), "need --redis-url"},
		{"min-replicas needs a real Redis", with(func(c *server.Config) {
			c.Redis.MinReplicas = 1
		}), "embedded"},
		{"min-replicas cannot be negative", with(func(c *server.Config) {
			c.RedisURL = "redis://r:6379"
			c.Redis.MinReplicas = -1
		}), "negative"},
		{"min-replicas needs a positive timeout", with(func(c *server.Config) {
			c.RedisURL = "redis://r:6379"
			c.Redis.MinReplicas, c.Redis.MinReplicasTimeout = 1, 0
		}), "min-replicas-timeout"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	good := []struct {
		name string
		cfg  server.Config
	}{
		{"the embedded Redis", server.DefaultConfig()},
		{"a URL", with(func(c *server.Config) { c.RedisURL = "rediss://u:p@r:6380/0" })},
		{"Sentinel with its own password and min-replicas", with(func(c *server.Config) {
			c.Redis.SentinelMaster, c.Redis.SentinelAddrs = "m", []string{"a:26379", "b:26379"}
			c.Redis.SentinelPassword, c.Redis.MinReplicas = "x", 1
		})},
		{"Cluster with ACL and mutual TLS", with(func(c *server.Config) {
			c.Redis.ClusterAddrs = []string{"a:7000", "b:7000"}
			c.Redis.Username, c.Redis.Password = "lg", "pw"
			c.Redis.TLSCA, c.Redis.TLSCert, c.Redis.TLSKey = "ca", "c", "k"
		})},
	}
	for _, tc := range good {
		t.Run(tc.name+" is valid", func(t *testing.T) {
			if err := tc.cfg.Validate(); err != nil {
				t.Fatalf("Validate: got %v, want nil", err)
			}
		})
	}
}

// ping builds the client for cfg and pings once. The dial window (the
// outage grace, 1 s by default) is widened to the request timeout: the
// cases are about what a handshake decides, and under the race detector
// on a loaded 2-core machine a TLS handshake took longer than 1 s.
func ping(t *testing.T, cfg server.Config) error {
	t.Helper()
	cfg.Redis.OutageGrace = cfg.HTTP.RequestTimeout
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	rdb, err := redisconn.NewClient(cfg.RedisOptions())
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

func TestRedisTLS(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t)
	srv := redistest.StartTLS(t, ca, ca.Issue(t, "redis"))

	t.Run("rediss:// with the test CA connects", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = srv.URL()
		cfg.Redis.TLSCA = ca.CertFile
		if err := ping(t, cfg); err != nil {
			t.Fatalf("ping: got %v, want nil", err)
		}
	})

	t.Run("rediss:// without the CA is refused by certificate verification", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = srv.URL()
		err := ping(t, cfg)
		var unknown x509.UnknownAuthorityError
		var verify *tls.CertificateVerificationError
		if !errors.As(err, &unknown) && !errors.As(err, &verify) {
			t.Fatalf("ping: got %v, want a certificate verification error", err)
		}
	})

	t.Run("redis:// with --redis-tls and the CA connects", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://" + srv.Addr()
		cfg.Redis.TLS, cfg.Redis.TLSCA = true, ca.CertFile
		if err := ping(t, cfg); err != nil {
			t.Fatalf("ping: got %v, want nil", err)
		}
	})

	t.Run("a server name that is not in the certificate is refused", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = srv.URL()
		cfg.Redis.TLSCA, cfg.Redis.TLSServerName = ca.CertFile, "elsewhere.example"
		var host x509.HostnameError
		if err := ping(t, cfg); !errors.As(err, &host) {
			t.Fatalf("ping: got %v, want a hostname error", err)
		}
	})

	t.Run("plain TCP to the TLS port fails", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://" + srv.Addr()
		if err := ping(t, cfg); err == nil {
			t.Fatal("ping: got nil, want an error")
		}
	})

	t.Run("a server that requires client certificates takes ours", func(t *testing.T) {
		mtls := redistest.StartTLS(t, ca, ca.Issue(t, "redis-mtls"), "--tls-auth-clients", "yes")
		cfg := server.DefaultConfig()
		cfg.RedisURL = mtls.URL()
		cfg.Redis.TLSCA = ca.CertFile
		if err := ping(t, cfg); err == nil {
			t.Fatal("ping without a client certificate: got nil, want an error")
		}
		kp := ca.Issue(t, "gateway")
		cfg.Redis.TLSCert, cfg.Redis.TLSKey = kp.CertFile, kp.KeyFile
		if err := ping(t, cfg); err != nil {
			t.Fatalf("ping with a client certificate: got %v, want nil", err)
		}
	})

	t.Run("the gateway is ready and grants locks over TLS", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.Addr = "127.0.0.1:0"
		cfg.RedisURL = srv.URL()
		cfg.Redis.TLSCA = ca.CertFile
		s := newServer(t, cfg)
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
			t.Fatalf("GET /readyz: got %d, want 200", code)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/tls-1", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Fatalf("POST /locks/tls-1: got %d, want 200", code)
		}
	})
}

func TestInsecureSkipVerify(t *testing.T) {
	t.Parallel()
	ca := redistest.NewCA(t)
	srv := redistest.StartTLS(t, ca, ca.Issue(t, "redis"))
	core, logs := observer.New(zap.WarnLevel)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = srv.URL()
	cfg.Redis.TLSInsecureSkipVerify = true
	s, err := server.New(cfg, zap.New(core))
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
		t.Fatalf("GET /readyz without the CA but skipping verification: got %d, want 200", code)
	}
	if n := logs.FilterMessageSnippet("NOT checked").Len(); n != 1 {
		t.Fatalf("warnings about the unchecked certificate: got %d, want 1 (logs: %v)", n, logs.All())
	}
}

func TestMinReplicasOverHTTP(t *testing.T) {
	t.Parallel()
	// A Redis with no replica: every grant is refused with 503 and undone.
	srv := redistest.Start(t)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = srv.URL()
	cfg.Redis.MinReplicas = 1
	cfg.Redis.MinReplicasTimeout = 50 * time.Millisecond
	s := newServer(t, cfg)
	req := httptest.NewRequest(http.MethodPost, "/locks/mr-1", strings.NewReader(`{"owner":"a","ttl_seconds":30}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	res := rec.Result()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), "unavailable") {
		t.Fatalf("POST /locks/mr-1: got %d Retry-After=%q %s, want 503 unavailable with Retry-After",
			res.StatusCode, res.Header.Get("Retry-After"), rec.Body.String())
	}
	if code := apptest.Do(t, s.Handler(), http.MethodGet, "/locks/mr-1", "").StatusCode; code != http.StatusNotFound {
		t.Fatalf("GET /locks/mr-1 after the refused grant: got %d, want 404", code)
	}
}

func TestRedisACL(t *testing.T) {
	t.Parallel()
	srv := startWithACLUser(t)
	ctx := context.Background()

	t.Run("the user cannot flush, list keys or read keys outside lg:", func(t *testing.T) {
		u := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "leasegate", Password: "s3cret"})
		defer u.Close()
		if err := u.Ping(ctx).Err(); err != nil {
			t.Fatalf("ping as leasegate: %v", err)
		}
		for _, cmd := range [][]interface{}{{"FLUSHALL"}, {"FLUSHDB"}, {"KEYS", "*"}, {"GET", "secret"}, {"SCAN", "0"}, {"CONFIG", "GET", "*"}, {"FUNCTION", "FLUSH"}, {"SCRIPT", "FLUSH"}} {
			if err := u.Do(ctx, cmd...).Err(); !redis.HasErrorPrefix(err, "NOPERM") {
				t.Errorf("%v as leasegate: got %v, want NOPERM", cmd, err)
			}
		}
	})

	t.Run("the gateway's user from the URL can acquire, renew and release", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.Addr = "127.0.0.1:0"
		cfg.RedisURL = "redis://leasegate:s3cret@" + srv.Addr()
		s := newServer(t, cfg)
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/acl-1", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Fatalf("POST /locks/acl-1: got %d, want 200", code)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/acl-1/renew", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Fatalf("renew: got %d, want 200", code)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodDelete, "/locks/acl-1?owner=a", "").StatusCode; code != http.StatusNoContent {
			t.Fatalf("DELETE: got %d, want 204", code)
		}
	})

	t.Run("--redis-username/--redis-password override the URL's", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://nobody:wrong@" + srv.Addr()
		cfg.Redis.Username, cfg.Redis.Password = "leasegate", "s3cret"
		if err := ping(t, cfg); err != nil {
			t.Fatalf("ping: got %v, want nil", err)
		}
	})

	t.Run("the user cannot touch keys outside lg:", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://leasegate:s3cret@" + srv.Addr()
		cfg.KeyPrefix = "other:"
		cfg.Addr = "127.0.0.1:0"
		s := newServer(t, cfg)
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/acl-2", `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusServiceUnavailable {
			t.Fatalf("POST with prefix other: got %d, want 503", code)
		}
	})

	t.Run("a wrong password is refused", func(t *testing.T) {
		cfg := server.DefaultConfig()
		cfg.RedisURL = "redis://leasegate:nope@" + srv.Addr()
		if err := ping(t, cfg); err == nil {
			t.Fatal("ping: got nil, want an auth error")
		}
	})
}

func TestRedisClusterThroughConfig(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.ClusterAddrs = cl.Addrs()[:1] // one seed finds the rest
	s := newServer(t, cfg)
	if _, ok := s.Redis().(*redis.ClusterClient); !ok {
		t.Fatalf("client: got %T, want *redis.ClusterClient", s.Redis())
	}
	for _, res := range []string{"c-1", "%7Bc%7D", "c-3", "c-4", "c-5", "c-6"} {
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/locks/"+res, `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusOK {
			t.Fatalf("POST /locks/%s: got %d, want 200", res, code)
		}
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/locks/"+res, "").StatusCode; code != http.StatusOK {
			t.Fatalf("GET /locks/%s: got %d, want 200", res, code)
		}
	}
	// Each script is measured once: on a cluster the hook sits on the node
	// clients, which every command passes through.
	if got := redisOps(t, s, "acquire"); got != 6 {
		t.Errorf("acquire scripts measured: got %v, want 6", got)
	}
}

func TestRedisMetricsOnClusterWithMinReplicas(t *testing.T) {
	t.Parallel()
	// --min-replicas runs each grant as a pipeline on the key's master
	// client, bypassing the cluster client's hooks; it is measured anyway.
	cl := redistest.StartCluster(t, 3)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.ClusterAddrs = cl.Addrs()
	cfg.Redis.MinReplicas = 1
	cfg.Redis.MinReplicasTimeout = 10 * time.Millisecond
	s := newServer(t, cfg)
	acquireAll := func() {
		t.Helper()
		for i := 0; i < 4; i++ {
			// No replicas: each grant is undone and answered 503, after
			// its pipeline (script + WAIT) ran.
			if code := apptest.Do(t, s.Handler(), http.MethodPost, fmt.Sprintf("/locks/mr-%d", i), `{"owner":"a","ttl_seconds":30}`).StatusCode; code != http.StatusServiceUnavailable {
				t.Fatalf("POST /locks/mr-%d: got %d, want 503 (not replicated)", i, code)
			}
		}
	}
	// The first round also pays for NOSCRIPT on each master (EVALSHA, then
	// EVAL: two pipelines); the second round is one pipeline per grant.
	acquireAll()
	before := redisOps(t, s, "pipeline:acquire")
	if before < 4 {
		t.Fatalf("acquire pipelines measured in the first round: got %v, want at least 4", before)
	}
	acquireAll()
	if got := redisOps(t, s, "pipeline:acquire") - before; got != 4 {
		t.Errorf("acquire pipelines measured in the second round: got %v, want 4", got)
	}
}

// redisOps reads leasegate_redis_duration_seconds_count for op from the
// server's /metrics.
func redisOps(t *testing.T, s *server.Server, op string) float64 {
	t.Helper()
	return metric(t, s, `leasegate_redis_duration_seconds_count{op="`+op+`"}`)
}

// metric reads one series (name and labels, as /metrics writes them) from
// the server's /metrics; 0 when it is not there.
func metric(t *testing.T, s *server.Server, series string) float64 {
	t.Helper()
	v, _ := metricOK(t, s, series)
	return v
}

// metricOK is metric, and whether the series is there at all.
func metricOK(t *testing.T, s *server.Server, series string) (float64, bool) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	prefix := series + " "
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", l, err)
			}
			return f, true
		}
	}
	return 0, false
}

// startWithACLUser starts a redis-server with the user "leasegate",
// password "s3cret", created by the ACL line docs/deployment.md gives.
func startWithACLUser(t *testing.T) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t)
	line := aclLine(t)
	args := []interface{}{}
	for _, f := range strings.Fields(strings.Replace(line, ">CHANGE-ME", ">s3cret", 1)) {
		args = append(args, f)
	}
	if err := srv.Client(t).Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return srv
}

// aclLine is the ACL SETUSER line of docs/deployment.md.
func aclLine(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatalf("read docs: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "ACL SETUSER leasegate ") {
			return l
		}
	}
	t.Fatal("docs/deployment.md has no line starting with \"ACL SETUSER leasegate \"")
	return ""
}

// newServer builds a server for cfg (not serving: requests go through its
// handler) and shuts it down at cleanup.
func newServer(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	s, err := server.New(cfg, nil)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}
