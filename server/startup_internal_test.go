package server

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest/observer"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/internal/redistest"
)

const permTestKey = "perm-test-client-key-0001"

func keyFileWithMode(t *testing.T, mode os.FileMode) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte("perm:client:t1:"+auth.HashKey(permTestKey)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(file, mode); err != nil { // not subject to the umask
		t.Fatal(err)
	}
	return file
}

func keyFileWarnings(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterMessageSnippet("API key file is accessible by group or others").All()
}

func TestAKeyFileOthersCanReadIsWarnedAbout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode os.FileMode
		warn bool
	}{
		{0o600, false},
		{0o400, false},
		{0o640, true},
		{0o644, true},
		{0o602, true},
	} {
		t.Run("mode "+strconv.FormatUint(uint64(tc.mode), 8), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.APIKeysFile = keyFileWithMode(t, tc.mode)
			log, logs := observedLogger()
			start(t, cfg, log)
			got := keyFileWarnings(logs)
			if tc.warn != (len(got) == 1) {
				t.Fatalf("got %d warnings, want warned=%v", len(got), tc.warn)
			}
			if tc.warn {
				f := got[0].ContextMap()
				if f["file"] != cfg.APIKeysFile || f["mode"] != "0"+strconv.FormatUint(uint64(tc.mode), 8) {
					t.Errorf("got fields %v, want file %s and mode 0%o", f, cfg.APIKeysFile, tc.mode)
				}
			}
		})
	}
	t.Run("a reload that finds the file opened up warns again", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.APIKeysFile = keyFileWithMode(t, 0o600)
		log, logs := observedLogger()
		s := start(t, cfg, log)
		if err := os.Chmod(cfg.APIKeysFile, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.ReloadKeys(); err != nil {
			t.Fatalf("ReloadKeys: %v", err)
		}
		if got := len(keyFileWarnings(logs)); got != 1 {
			t.Errorf("got %d warnings, want 1", got)
		}
	})
}

func TestTheEmbeddedRedisListensWhereItIsToldAndSaysHowToReachIt(t *testing.T) {
	t.Parallel()
	t.Run("on the given address, named with a redis-cli line", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Addr = "127.0.0.1:0"
		cfg.EmbeddedRedisAddr = redistest.FreeAddr(t)
		log, logs := observedLogger()
		s := start(t, cfg, log)
		if got := s.conn.EmbeddedAddr(); got != cfg.EmbeddedRedisAddr {
			t.Errorf("got embedded Redis on %s, want %s", got, cfg.EmbeddedRedisAddr)
		}
		_, port, _ := net.SplitHostPort(cfg.EmbeddedRedisAddr)
		banner := logs.FilterMessageSnippet("embedded in-memory Redis").All()
		if len(banner) != 1 {
			t.Fatalf("got %d start lines about the embedded Redis, want 1", len(banner))
		}
		if got, want := banner[0].ContextMap()["redis_cli"], "redis-cli -p "+port; got != want {
			t.Errorf("got redis_cli %v, want %q", got, want)
		}
	})
	t.Run("by default on a free loopback port", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Addr = "127.0.0.1:0"
		s := start(t, cfg, nil)
		host, port, err := net.SplitHostPort(s.conn.EmbeddedAddr())
		if err != nil || host != "127.0.0.1" || port == "0" {
			t.Errorf("got %q (%v), want 127.0.0.1 and a port", s.conn.EmbeddedAddr(), err)
		}
	})
	t.Run("a non-loopback address is a configuration error", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Addr = "127.0.0.1:0"
		cfg.EmbeddedRedisAddr = "0.0.0.0:6390"
		_, err := New(cfg, nil)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "embedded-redis-addr") {
			t.Errorf("got %v, want ErrConfig naming embedded-redis-addr", err)
		}
	})
}

func TestConfigurationRefusalsAreErrConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"a value out of range", func(c *Config) { c.HTTP.MaxTTL = 1 }},
		{"no keys on a non-loopback address", func(c *Config) { c.Addr = "0.0.0.0:0" }},
		{"the embedded Redis behind a non-loopback address", func(c *Config) { c.Addr = "0.0.0.0:0"; c.RedisURL = ""; c.InsecureOpen = true }},
		{"a key file with no key", func(c *Config) {
			f := filepath.Join(t.TempDir(), "keys")
			if err := os.WriteFile(f, []byte("# none yet\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c.APIKeysFile = f
		}},
		{"a key file that is missing", func(c *Config) { c.APIKeysFile = filepath.Join(t.TempDir(), "nope") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tc.edit(&cfg)
			s, err := New(cfg, nil)
			if err == nil {
				s.closeRedis()
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("got %v, want ErrConfig", err)
			}
		})
	}
}

func TestOpenAPIYAMLNeedsAKeyWhenKeysAreConfigured(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.APIKeysFile = keyFileWithMode(t, 0o600)
	s := start(t, cfg, nil)
	for _, tc := range []struct {
		name string
		key  string
		want int
	}{
		{"without a key it is 401", "", http.StatusUnauthorized},
		{"a client key reads it", permTestKey, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/openapi.yaml", nil)
			if tc.key != "" {
				req.Header.Set("Authorization", "Bearer "+tc.key)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if got := rec.Result().StatusCode; got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestMetricsExportBuildInfoWithVersionCommitAndGo(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	s := start(t, cfg, nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	bi := Build()
	re := regexp.MustCompile(`(?m)^leasegate_build_info\{commit="([^"]*)",goversion="([^"]*)",version="([^"]*)"\} 1$`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no leasegate_build_info{commit,goversion,version} 1 line in /metrics:\n%s", body)
	}
	if m[1] != bi.Commit || m[2] != bi.GoVersion || m[3] != bi.Version {
		t.Errorf("got commit=%q goversion=%q version=%q, want %+v", m[1], m[2], m[3], bi)
	}
}
