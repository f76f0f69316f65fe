package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

func testConfig(t *testing.T) server.Config {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = redistest.FreeAddr(t)
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.DrainDelay = 0 // the drain's own tests: cmd/leasegate, deploy
	return cfg
}

func TestEmbeddedModeRefusesNonLoopbackAddresses(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.10:0", "example.com:0", "no-port"} {
		t.Run("addr "+addr, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Addr = addr
			s, err := server.New(cfg, nil)
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatalf("got a server on %s with the embedded Redis, want refused", addr)
			}
			if !strings.Contains(err.Error(), "loopback") {
				t.Errorf("got %v, want an error that says loopback only", err)
			}
		})
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		t.Run("addr "+addr+" is loopback", func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Addr = addr
			s, err := server.New(cfg, nil)
			if err != nil {
				if strings.Contains(addr, "::1") && strings.Contains(err.Error(), "listen") {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatalf("New(%s): %v", addr, err)
			}
			_ = s.Shutdown(context.Background())
		})
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*server.Config){
		"max-ttl under a second":            func(c *server.Config) { c.HTTP.MaxTTL = time.Millisecond },
		"a negative max-wait":               func(c *server.Config) { c.HTTP.MaxWait = -time.Second },
		"a zero body limit":                 func(c *server.Config) { c.HTTP.BodyLimit = 0 },
		"a zero request timeout":            func(c *server.Config) { c.HTTP.RequestTimeout = 0 },
		"an empty key prefix":               func(c *server.Config) { c.KeyPrefix = "" },
		"a key prefix with a hash tag":      func(c *server.Config) { c.KeyPrefix = "{lg}:" },
		"a key prefix with an empty tag":    func(c *server.Config) { c.KeyPrefix = "lg{}:" },
		"a key prefix with a closing brace": func(c *server.Config) { c.KeyPrefix = "lg}:" },
		"a write timeout at most max-wait":  func(c *server.Config) { c.WriteTimeout = c.HTTP.MaxWait },
		"a write timeout at most max-wait plus request-timeout": func(c *server.Config) {
			c.WriteTimeout = c.HTTP.MaxWait + c.HTTP.RequestTimeout
		},
		"a redis URL that is not a URL":        func(c *server.Config) { c.RedisURL = "http://localhost:6379" },
		"a redis URL with a bad port number":   func(c *server.Config) { c.RedisURL = "redis://127.0.0.1:notaport" },
		"an ops session secret under 32 bytes": func(c *server.Config) { c.OpsSessionSecret = "short" },
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			cfg := testConfig(t)
			mutate(&cfg)
			s, err := server.New(cfg, nil)
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatalf("got a server, want a config error")
			}
		})
	}
	if err := server.DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig().Validate(): got %v, want nil", err)
	}
}

// waitUp polls /healthz until the server answers (the signal that Run has
// bound its port), with a deadline.
func waitUp(t *testing.T, base string) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, "server at "+base+" answers /healthz", func() bool {
		res, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// waitClosed polls until nothing accepts connections on addr.
func waitClosed(t *testing.T, addr string) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, addr+" refuses connections", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
}

func acquire(t *testing.T, base, resource, owner string) map[string]any {
	t.Helper()
	res, err := http.Post(base+"/locks/"+resource, "application/json",
		strings.NewReader(`{"owner":"`+owner+`","ttl_seconds":30}`))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	var got map[string]any
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST /locks/%s: got %d, %v", resource, res.StatusCode, err)
	}
	return got
}

// Run serves until its context is cancelled, then drains: a request that
// is in flight when shutdown starts (its body half sent) is still answered,
// Run returns nil and the port is closed.
func TestRunShutsDownGracefullyOnCancel(t *testing.T) {
	t.Parallel()
	for _, nilLogger := range []bool{false, true} {
		name := "with a logger"
		if nilLogger {
			name = "with a nil logger"
		}
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(t)
			base := "http://" + cfg.Addr
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				if nilLogger {
					done <- server.Run(ctx, cfg, nil)
					return
				}
				done <- server.Run(ctx, cfg, zap.NewNop())
			}()
			waitUp(t, base)
			if got := acquire(t, base, "before", "svc-a"); got["acquired"] != true {
				t.Fatalf("got %v, want acquired", got)
			}

			// An in-flight request: its handler is reading the body (the
			// server said 100 Continue, the signal that it got this far)
			// and only half of it has been sent.
			body := `{"owner":"svc-a","ttl_seconds":30}`
			conn, err := net.Dial("tcp", cfg.Addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer conn.Close()
			br := bufio.NewReader(conn)
			fmt.Fprintf(conn, "POST /locks/inflight HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", len(body))
			if cont, err := http.ReadResponse(br, nil); err != nil || cont.StatusCode != http.StatusContinue {
				t.Fatalf("got %v, %v; want 100 Continue", cont, err)
			}
			if _, err := io.WriteString(conn, body[:10]); err != nil {
				t.Fatalf("sending half the body: %v", err)
			}

			cancel()
			waitClosed(t, cfg.Addr)
			select {
			case err := <-done:
				t.Fatalf("Run returned %v while a request was in flight, want it to wait", err)
			default:
			}
			if _, err := io.WriteString(conn, body[10:]); err != nil {
				t.Fatalf("finishing the body: %v", err)
			}
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("reading the in-flight answer: %v", err)
			}
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusOK || !strings.Contains(string(b), `"acquired":true`) {
				t.Errorf("in-flight request: got %d %s, want 200 acquired", res.StatusCode, b)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run: got %v, want nil after a graceful shutdown", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("Run did not return 15s after cancel")
			}
			if _, err := net.DialTimeout("tcp", cfg.Addr, time.Second); err == nil {
				t.Errorf("got a connection to %s after Run returned, want the port closed", cfg.Addr)
			}
		})
	}
}

func TestRunFailsWhenThePortIsTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := server.DefaultConfig()
	cfg.Addr = l.Addr().String()
	if err := server.Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("got %v, want a listen error", err)
	}
}

func TestServerOnARealRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := testConfig(t)
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = srv.URL()
	cfg.KeyPrefix = "servertest:"
	s := newServer(t, cfg)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)

	first := acquire(t, ts.URL, "job", "svc-a")
	if first["acquired"] != true {
		t.Fatalf("got %v, want acquired", first)
	}
	keys, err := srv.Client(t).Keys(context.Background(), "servertest:*").Result()
	if err != nil || len(keys) != 2 {
		t.Errorf("got keys %q (%v), want the lock key and the tenant's lock index under the configured prefix", keys, err)
	}
	if res, err := http.Get(ts.URL + "/readyz"); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("readyz: got %v, %v; want 200", res, err)
	}
	srv.Kill()
	res, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatalf("readyz: %v", err)
	}
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Errorf("readyz with Redis down: got %d Retry-After %q, want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
	res, err = http.Post(ts.URL+"/locks/other", "application/json", strings.NewReader(`{"owner":"svc-a","ttl_seconds":30}`))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("acquire with Redis down: got %d, want 503", res.StatusCode)
	}
}

// The embedded Redis's TTLs follow real time, so a lease expires there too.
func TestEmbeddedRedisExpiresLeases(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Addr = "127.0.0.1:0"
	s := newServer(t, cfg)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	res, err := http.Post(ts.URL+"/locks/short", "application/json", strings.NewReader(`{"owner":"svc-a","ttl_seconds":1}`))
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("POST: %v %v", res, err)
	}
	mini := s.Redis()
	// The lease ends by the embedded clock; its lock key stays as the
	// fence, and so does the lock index until a sweep (docs/operations.md).
	redistest.Eventually(t, 10*time.Second, "GET 404 with only the lock key and the index left", func() bool {
		n, err := mini.DBSize(context.Background()).Result()
		if err != nil {
			t.Fatalf("DBSIZE: %v", err)
		}
		get, err := http.Get(ts.URL + "/locks/short")
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		_ = get.Body.Close()
		return get.StatusCode == http.StatusNotFound && n == 2
	})
}

// A gateway restart (a new server process on the same Redis) keeps every
// lock and keeps fencing tokens increasing: gateways hold no lock state.
func TestTokensIncreaseAcrossGatewayRestarts(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var last float64
	for i := 0; i < 3; i++ {
		cfg := testConfig(t)
		cfg.Addr = "127.0.0.1:0"
		cfg.RedisURL = srv.URL()
		s, err := server.New(cfg, nil)
		if err != nil {
			t.Fatalf("New #%d: %v", i, err)
		}
		ts := httptest.NewServer(s.Handler())
		if i > 0 {
			// The lease taken by the previous gateway is still there.
			res, err := http.Get(ts.URL + "/locks/job")
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("gateway #%d: GET the previous gateway's lock: %v %v, want 200", i, res, err)
			}
			req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/locks/job?owner=gw-"+fmt.Sprint(i-1), nil)
			if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusNoContent {
				t.Fatalf("gateway #%d: release the previous gateway's lock: %v %v, want 204", i, res, err)
			}
		}
		got := acquire(t, ts.URL, "job", "gw-"+fmt.Sprint(i))
		lock, _ := got["lock"].(map[string]any)
		tok, _ := lock["token"].(float64)
		if tok <= last {
			t.Errorf("gateway #%d: got token %.0f, want above %.0f", i, tok, last)
		}
		last = tok
		ts.Close()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown #%d: %v", i, err)
		}
	}
}

// --addr-file: once the gateway serves, the file holds the bound address
// (port 0 resolved) and a newline; it is gone once Run has returned.
func TestRunWritesTheAddrFileWhileServing(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Addr = "127.0.0.1:0"
	cfg.AddrFile = filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, nil) }()
	var line string
	redistest.Eventually(t, 10*time.Second, "the address file is written", func() bool {
		b, err := os.ReadFile(cfg.AddrFile)
		line = string(b)
		return err == nil
	})
	addr, ok := strings.CutSuffix(line, "\n")
	if !ok || strings.Contains(addr, "\n") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("address file: got %q, want the bound host:port and one newline", line)
	}
	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz at the file's address: %v", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: got %d, want 200", res.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	if _, err := os.Stat(cfg.AddrFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("address file after stop: got %v, want it removed", err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg.AddrFile), "*")); len(left) != 0 {
		t.Errorf("files left in the directory: %v, want none", left)
	}
}

func TestRunFailsWhenTheAddrFileCannotBeWritten(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.AddrFile = filepath.Join(t.TempDir(), "missing-dir", "addr")
	if err := server.Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "addr-file") {
		t.Errorf("got %v, want an --addr-file error", err)
	}
	waitClosed(t, cfg.Addr)
}
