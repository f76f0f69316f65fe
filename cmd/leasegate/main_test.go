package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// waitServing polls GET http://addr/healthz until leasegate answers. A
// value on exited first (leasegate stopped before it served) fails the
// test with stderr; so does a bound of 20 s, which only guards a hang.
func waitServing[T any](t *testing.T, addr string, exited <-chan T, stderr fmt.Stringer) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, "leasegate up on "+addr, func() bool {
		res, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			_ = res.Body.Close()
			return true
		}
		select {
		case v := <-exited:
			t.Fatalf("leasegate exited before serving (%v): %s", v, stderr)
		default:
		}
		return false
	})
}

// parseServe parses serve's flags as cmdServe does, without running.
func parseServe(t *testing.T, args []string, kv map[string]string) (server.Config, string, error) {
	t.Helper()
	cfg, level, _, err := parseServeAll(t, args, kv)
	return cfg, level, err
}

// parseServeAll is parseServe that also returns the abuse flags, which
// become part of the config only when cmdServe applies them.
func parseServeAll(t *testing.T, args []string, kv map[string]string) (server.Config, string, abuseFlags, error) {
	t.Helper()
	cfg := server.DefaultConfig()
	level := "info"
	fs := flag.NewFlagSet("leasegate serve", flag.ContinueOnError)
	af := serveFlags(fs, &cfg, &level)
	err := parseFlags(fs, args, env(kv), io.Discard)
	return cfg, level, *af, err
}

func TestServeFlagsAndEnvironmentFillTheConfig(t *testing.T) {
	t.Parallel()
	t.Run("defaults when nothing is set", func(t *testing.T) {
		cfg, level, err := parseServe(t, nil, nil)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		want := server.DefaultConfig()
		if !reflect.DeepEqual(cfg, want) || level != "info" {
			t.Errorf("got %+v level %q, want the defaults %+v level info", cfg, level, want)
		}
		if cfg.Addr != "127.0.0.1:8080" || cfg.RedisURL != "" {
			t.Errorf("got addr %q redis-url %q, want 127.0.0.1:8080 and embedded", cfg.Addr, cfg.RedisURL)
		}
	})
	t.Run("every flag has a LEASEGATE_ variable", func(t *testing.T) {
		kv := map[string]string{
			"LEASEGATE_ADDR":                      "127.0.0.1:9999",
			"LEASEGATE_ADDR_FILE":                 "/run/leasegate.addr",
			"LEASEGATE_ADDR_MODE":                 "0660",
			"LEASEGATE_ADDR_GROUP":                "www-data",
			"LEASEGATE_REDIS_URL":                 "redis://10.0.0.1:6380/2",
			"LEASEGATE_EMBEDDED_REDIS_ADDR":       "127.0.0.1:6390",
			"LEASEGATE_EMBEDDED_REDIS_TEST_CLOCK": "true",
			"LEASEGATE_KEY_PREFIX":                "env:",
			"LEASEGATE_FENCE_RETENTION":           "48h",
			"LEASEGATE_MAX_TTL":                   "1h",
			"LEASEGATE_MAX_WAIT":                  "10s",
			"LEASEGATE_MAX_WAITERS":               "250",
			"LEASEGATE_DEFAULT_LOCK_DELAY":        "1500ms",
			"LEASEGATE_BODY_LIMIT":                "1024",
			"LEASEGATE_REQUEST_TIMEOUT":           "2s",
			"LEASEGATE_READ_HEADER_TIMEOUT":       "3s",
			"LEASEGATE_READ_TIMEOUT":              "4s",
			"LEASEGATE_WRITE_TIMEOUT":             "50s",
			"LEASEGATE_IDLE_TIMEOUT":              "6s",
			"LEASEGATE_MAX_HEADER_BYTES":          "2048",
			"LEASEGATE_SHUTDOWN_TIMEOUT":          "7s",
			"LEASEGATE_DRAIN_DELAY":               "3s",
			"LEASEGATE_LOG_LEVEL":                 "debug",

			"LEASEGATE_API_KEYS_FILE":      "/etc/leasegate/keys",
			"LEASEGATE_API_KEYS":           "a:client:t:" + strings.Repeat("ab", 32),
			"LEASEGATE_INSECURE_OPEN":      "true",
			"LEASEGATE_METRICS_AUTH":       "none",
			"LEASEGATE_TRUSTED_PROXIES":    "10.0.0.0/8,192.0.2.1",
			"LEASEGATE_OPS_SESSION_TTL":    "30m",
			"LEASEGATE_OPS_SECURE_COOKIES": "true",
			"LEASEGATE_OPS_SESSION_SECRET": "0123456789abcdef0123456789abcdef",

			"LEASEGATE_REDIS_SENTINEL_MASTER":          "mymaster",
			"LEASEGATE_REDIS_SENTINEL_ADDRS":           "s1:26379,s2:26379",
			"LEASEGATE_REDIS_SENTINEL_USERNAME":        "sen-user",
			"LEASEGATE_REDIS_SENTINEL_PASSWORD":        "sen-pass",
			"LEASEGATE_REDIS_CLUSTER_ADDRS":            "c1:7000,c2:7000",
			"LEASEGATE_REDIS_USERNAME":                 "gw",
			"LEASEGATE_REDIS_PASSWORD":                 "pw",
			"LEASEGATE_REDIS_TLS":                      "true",
			"LEASEGATE_REDIS_TLS_CA":                   "/ca.pem",
			"LEASEGATE_REDIS_TLS_CERT":                 "/cert.pem",
			"LEASEGATE_REDIS_TLS_KEY":                  "/key.pem",
			"LEASEGATE_REDIS_TLS_SERVER_NAME":          "redis.internal",
			"LEASEGATE_REDIS_TLS_INSECURE_SKIP_VERIFY": "true",
			"LEASEGATE_MIN_REPLICAS":                   "2",
			"LEASEGATE_MIN_REPLICAS_TIMEOUT":           "250ms",
			"LEASEGATE_OUTAGE_GRACE":                   "300ms",
			"LEASEGATE_NO_AUTO_PIPELINE":               "true",
			"LEASEGATE_ALLOW_EVICTION":                 "true",
			"LEASEGATE_LOCK_CLASSES":                   "checkin:,payments/",
			"LEASEGATE_AUDIT_RETENTION":                "720h",
			"LEASEGATE_INDEX_SWEEP_INTERVAL":           "30s",

			"LEASEGATE_ABUSE_POLICY_FILE":       "/etc/leasegate/policies.json",
			"LEASEGATE_ABUSE_MAX_ATTEMPTS":      "9",
			"LEASEGATE_ABUSE_FLAG_RETENTION":    "12h",
			"LEASEGATE_ATTEMPT_LOG_RETENTION":   "2h",
			"LEASEGATE_ATTEMPT_LOG_MAX_ENTRIES": "5000",
			"LEASEGATE_ABUSE_LOG":               "/var/log/leasegate/abuse.log",

			"LEASEGATE_WEBHOOK_URL":          "https://a.example/hook,https://b.example/hook",
			"LEASEGATE_WEBHOOK_SECRET":       "0123456789abcdef-webhook",
			"LEASEGATE_WEBHOOK_MAX_ATTEMPTS": "12",
			"LEASEGATE_WEBHOOK_TIMEOUT":      "3s",
		}
		cfg, level, af, err := parseServeAll(t, nil, kv)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		want := server.DefaultConfig()
		want.Addr = "127.0.0.1:9999"
		want.AddrFile = "/run/leasegate.addr"
		want.AddrMode, want.AddrGroup = "0660", "www-data"
		want.RedisURL = "redis://10.0.0.1:6380/2"
		want.EmbeddedRedisAddr = "127.0.0.1:6390"
		want.EmbeddedRedisTestClock = true
		want.KeyPrefix = "env:"
		want.FenceRetention = 48 * time.Hour
		want.HTTP.MaxTTL = time.Hour
		want.HTTP.MaxWait = 10 * time.Second
		want.MaxWaiters = 250
		want.HTTP.DefaultLockDelay = 1500 * time.Millisecond
		want.HTTP.BodyLimit = 1024
		want.HTTP.RequestTimeout = 2 * time.Second
		want.ReadHeaderTimeout = 3 * time.Second
		want.ReadTimeout = 4 * time.Second
		want.WriteTimeout = 50 * time.Second
		want.IdleTimeout = 6 * time.Second
		want.MaxHeaderBytes = 2048
		want.ShutdownTimeout = 7 * time.Second
		want.DrainDelay = 3 * time.Second
		want.APIKeysFile = "/etc/leasegate/keys"
		want.APIKeys = "a:client:t:" + strings.Repeat("ab", 32)
		want.InsecureOpen = true
		want.MetricsAuth = "none"
		want.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.1"}
		want.Webhooks.URLs = []string{"https://a.example/hook", "https://b.example/hook"}
		want.Webhooks.Secret = "0123456789abcdef-webhook"
		want.Webhooks.MaxAttempts = 12
		want.Webhooks.Timeout = 3 * time.Second
		want.OpsSessionTTL = 30 * time.Minute
		want.HTTP.OpsSecureCookies = true
		want.OpsSessionSecret = "0123456789abcdef0123456789abcdef"
		want.Redis.SentinelMaster = "mymaster"
		want.Redis.SentinelAddrs = []string{"s1:26379", "s2:26379"}
		want.Redis.SentinelUsername = "sen-user"
		want.Redis.SentinelPassword = "sen-pass"
		want.Redis.ClusterAddrs = []string{"c1:7000", "c2:7000"}
		want.Redis.Username = "gw"
		want.Redis.Password = "pw"
		want.Redis.TLS = true
		want.Redis.TLSCA = "/ca.pem"
		want.Redis.TLSCert = "/cert.pem"
		want.Redis.TLSKey = "/key.pem"
		want.Redis.TLSServerName = "redis.internal"
		want.Redis.TLSInsecureSkipVerify = true
		want.Redis.MinReplicas = 2
		want.Redis.MinReplicasTimeout = 250 * time.Millisecond
		want.Redis.OutageGrace = 300 * time.Millisecond
		want.NoAutoPipeline = true
		want.Redis.AllowEviction = true
		want.LockClasses = []string{"checkin:", "payments/"}
		want.AuditRetention = 720 * time.Hour
		want.IndexSweepInterval = 30 * time.Second
		wantAbuse := abuseFlags{
			policyFile:    "/etc/leasegate/policies.json",
			maxAttempts:   9,
			flagRetention: 12 * time.Hour,

			attemptLogRetention: 2 * time.Hour, attemptLogMaxEntries: 5000,
			log: "/var/log/leasegate/abuse.log",
		}
		if af != wantAbuse {
			t.Errorf("got abuse flags %+v, want %+v", af, wantAbuse)
		}
		if !reflect.DeepEqual(cfg, want) || level != "debug" {
			t.Errorf("got %+v level %q,\nwant %+v level debug", cfg, level, want)
		}
		// Every flag is covered above: adding a flag without its variable
		// here fails this test.
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		c, l := server.DefaultConfig(), "info"
		serveFlags(fs, &c, &l)
		fs.VisitAll(func(f *flag.Flag) {
			if _, ok := kv[envName(f.Name)]; !ok {
				t.Errorf("flag --%s: %s is not tested", f.Name, envName(f.Name))
			}
		})
	})
	t.Run("a flag beats its variable", func(t *testing.T) {
		cfg, level, err := parseServe(t,
			[]string{"--addr", "127.0.0.1:7000", "-max-ttl=2h", "--log-level", "warn"},
			map[string]string{"LEASEGATE_ADDR": "127.0.0.1:9999", "LEASEGATE_MAX_TTL": "1h", "LEASEGATE_LOG_LEVEL": "debug", "LEASEGATE_KEY_PREFIX": "env:"})
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if cfg.Addr != "127.0.0.1:7000" || cfg.HTTP.MaxTTL != 2*time.Hour || level != "warn" {
			t.Errorf("got addr %q max-ttl %v level %q, want the flags' 127.0.0.1:7000 2h warn", cfg.Addr, cfg.HTTP.MaxTTL, level)
		}
		if cfg.KeyPrefix != "env:" {
			t.Errorf("got key-prefix %q, want env: from the environment where no flag is given", cfg.KeyPrefix)
		}
	})
	t.Run("a bad environment value is a usage error naming the variable", func(t *testing.T) {
		_, _, err := parseServe(t, nil, map[string]string{"LEASEGATE_MAX_TTL": "forever"})
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "LEASEGATE_MAX_TTL") {
			t.Errorf("got %v, want a usageError naming LEASEGATE_MAX_TTL", err)
		}
	})
	t.Run("a bad flag value is a usage error", func(t *testing.T) {
		_, _, err := parseServe(t, []string{"--body-limit", "lots"}, nil)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("got %v, want a usageError", err)
		}
	})
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stderr string
		stdout string
	}{
		{"no command is a usage error", nil, nil, 2, "Usage:", ""},
		{"an unknown command is a usage error", []string{"frobnicate"}, nil, 2, `unknown command "frobnicate"`, ""},
		{"help succeeds", []string{"help"}, nil, 0, "", "leasegate serve"},
		{"serve -h succeeds and mentions the environment", []string{"serve", "-h"}, nil, 0, "LEASEGATE_", ""},
		{"a bad env value exits 2", []string{"serve"}, map[string]string{"LEASEGATE_MAX_TTL": "abc"}, 2, "LEASEGATE_MAX_TTL", ""},
		{"a bad numeric env value exits 2", []string{"serve"}, map[string]string{"LEASEGATE_BODY_LIMIT": "1e3"}, 2, "LEASEGATE_BODY_LIMIT", ""},
		{"an unknown flag exits 2", []string{"serve", "--nope"}, nil, 2, "nope", ""},
		{"a stray argument exits 2", []string{"serve", "extra"}, nil, 2, "no arguments", ""},
		{"a bad log level exits 2", []string{"serve", "--log-level", "loud"}, nil, 2, "log-level", ""},
		{"a non-loopback addr without Redis exits 2", []string{"serve", "--addr", "0.0.0.0:0"}, nil, 2, "loopback", ""},
		{"an invalid config exits 2", []string{"serve", "--addr", "127.0.0.1:0", "--max-ttl", "1ms"}, nil, 2, "max-ttl", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(ctx, tc.args, strings.NewReader(""), &stdout, &stderr, env(tc.env))
			if code != tc.code {
				t.Errorf("got exit %d, want %d (stderr: %s)", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("got stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
			if !strings.Contains(stdout.String(), tc.stdout) {
				t.Errorf("got stdout %q, want it to contain %q", stdout.String(), tc.stdout)
			}
		})
	}
}

func TestServeRunsOnTheEmbeddedRedisAndStopsOnCancel(t *testing.T) {
	t.Parallel()
	addr := redistest.FreeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout logtest.Buffer
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve"}, strings.NewReader(""), &stdout, &stderr,
			env(map[string]string{"LEASEGATE_ADDR": addr}))
	}()
	waitServing(t, addr, done, &stderr)
	res, err := http.Post("http://"+addr+"/locks/cli", "application/json", strings.NewReader(`{"owner":"svc-a","ttl_seconds":30}`))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST: %v %v", res, err)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("got exit %d (stderr %s), want 0", code, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not stop 15s after cancel")
	}
	logs := stdout.String()
	for _, want := range []string{"embedded in-memory Redis", `"msg":"request"`, `"route":"/locks/:resource"`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("got logs %s\nwant them to contain %s", logs, want)
		}
	}
	for i, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !strings.HasPrefix(line, "{") {
			t.Errorf("log line %d is not a JSON object: %q", i, line)
		}
	}
}
