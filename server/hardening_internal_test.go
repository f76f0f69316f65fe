package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/leasegate/leasegate/auth"
)

const (
	testClientKey = "server-test-client-key-0001"
	testOpsKey    = "server-test-ops-key-000000001"
)

func testKeyEntries() string {
	return "c:client:t1:" + auth.HashKey(testClientKey) + ",o:ops:t1:" + auth.HashKey(testOpsKey)
}

// testConfig is a config on a free loopback port and a fresh miniredis.
func testConfig(t *testing.T) Config {
	t.Helper()
	m := miniredis.RunT(t)
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = "redis://" + m.Addr()
	cfg.DrainDelay = 0
	return cfg
}

func observedLogger() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// start builds and serves cfg; the server is shut down at cleanup.
func start(t *testing.T, cfg Config, log *zap.Logger) *Server {
	t.Helper()
	s, err := New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

func get(t *testing.T, s *Server, path, key string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func TestOpenModeListensOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	t.Run("no keys on a non-loopback address is refused", func(t *testing.T) {
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
			cfg := testConfig(t)
			cfg.Addr = addr
			s, err := New(cfg, nil)
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatalf("New on %s without keys: got nil error, want a refusal", addr)
			}
			if !strings.Contains(err.Error(), "--insecure-open") || !strings.Contains(err.Error(), "--api-keys-file") {
				t.Errorf("got %q, want it to name --api-keys-file and --insecure-open", err)
			}
		}
	})
	t.Run("no keys on loopback runs open and says so", func(t *testing.T) {
		log, logs := observedLogger()
		s := start(t, testConfig(t), log)
		if n := logs.FilterMessageSnippet("gateway is OPEN").FilterLevelExact(zapcore.WarnLevel).Len(); n != 1 {
			t.Errorf("got %d open-mode warnings, want 1", n)
		}
		if res, body := get(t, s, "/metrics", ""); res.StatusCode != http.StatusOK {
			t.Errorf("GET /metrics in open mode: got %d %s, want 200", res.StatusCode, body)
		}
	})
	t.Run("--insecure-open allows a non-loopback address, with the warning", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Addr = "0.0.0.0:0"
		cfg.InsecureOpen = true
		log, logs := observedLogger()
		start(t, cfg, log)
		if n := logs.FilterMessageSnippet("gateway is OPEN").Len(); n != 1 {
			t.Errorf("got %d open-mode warnings, want 1", n)
		}
	})
	t.Run("with keys a non-loopback address needs no flag", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Addr = "0.0.0.0:0"
		cfg.APIKeys = testKeyEntries()
		log, logs := observedLogger()
		s := start(t, cfg, log)
		if n := logs.FilterMessageSnippet("OPEN").Len(); n != 0 {
			t.Errorf("got %d open-mode warnings, want 0", n)
		}
		_, port, _ := net.SplitHostPort(s.Addr())
		res, err := http.Get("http://127.0.0.1:" + port + "/locks/x")
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /locks/x without a key: got %d, want 401", res.StatusCode)
		}
	})
	t.Run("a bad key entry stops the start", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.APIKeys = "c:client:t1:" + testClientKey
		_, err := New(cfg, nil)
		if !errors.Is(err, auth.ErrBadEntry) {
			t.Errorf("got %v, want auth.ErrBadEntry", err)
		}
	})
}

func TestMetricsAuthOverHTTP(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode                  string
		none, client, opsWant int
	}{
		{MetricsAuthOps, http.StatusUnauthorized, http.StatusForbidden, http.StatusOK},
		{MetricsAuthNone, http.StatusOK, http.StatusOK, http.StatusOK},
	} {
		t.Run("--metrics-auth="+tc.mode, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.APIKeys = testKeyEntries()
			cfg.MetricsAuth = tc.mode
			s := start(t, cfg, nil)
			for _, c := range []struct {
				key  string
				want int
			}{{"", tc.none}, {testClientKey, tc.client}, {testOpsKey, tc.opsWant}} {
				if res, body := get(t, s, "/metrics", c.key); res.StatusCode != c.want {
					t.Errorf("key %q: got %d %s, want %d", c.key, res.StatusCode, body, c.want)
				}
			}
			for _, p := range []string{"/healthz", "/readyz"} {
				if res, body := get(t, s, p, ""); res.StatusCode != http.StatusOK {
					t.Errorf("%s without a key: got %d %s, want 200", p, res.StatusCode, body)
				}
			}
		})
	}
	t.Run("an unknown mode is a config error", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.MetricsAuth = "all"
		if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "metrics-auth") {
			t.Errorf("got %v, want a metrics-auth error", err)
		}
	})
}

func TestRedisMetricsAreRecorded(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.APIKeys = testKeyEntries()
	s := start(t, cfg, nil)
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.Addr()+"/locks/metered", strings.NewReader(`{"owner":"o","ttl_seconds":30}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testClientKey)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("acquire: got %d, want 200", res.StatusCode)
	}
	_, body := get(t, s, "/metrics", testOpsKey)
	if want := `leasegate_redis_duration_seconds_count{op="acquire"} 1`; !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %q", want)
	}
}

func problemType(t *testing.T, res *http.Response, body []byte) string {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("got Content-Type %q, want application/problem+json (body %q)", ct, body)
	}
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem %q: %v", body, err)
	}
	if p.Status != res.StatusCode {
		t.Errorf("got problem status %d, want %d", p.Status, res.StatusCode)
	}
	return p.Type[strings.LastIndex(p.Type, "/")+1:]
}
