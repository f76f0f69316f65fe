package server_test

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// socketDir is a short temporary directory: a socket path must fit in
// about 100 bytes, which t.TempDir's may not.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "lg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// A gateway on a Unix socket serves the same routes (open mode: a socket
// is local), the Go client reaches it by unix:/path, the socket has the
// mode asked for, the address file names it, and it is gone after stop.
func TestRunServesOnAUnixSocket(t *testing.T) {
	t.Parallel()
	dir := socketDir(t)
	cfg := testConfig(t)
	sock := filepath.Join(dir, "gw.sock")
	cfg.Addr, cfg.AddrMode, cfg.AddrFile = "unix:"+sock, "0660", filepath.Join(dir, "addr")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, nil) }()
	var line []byte
	redistest.Eventually(t, 10*time.Second, "the address file", func() bool {
		var err error
		line, err = os.ReadFile(cfg.AddrFile)
		return err == nil
	})
	if got, want := string(line), cfg.Addr+"\n"; got != want {
		t.Errorf("address file: got %q, want %q", got, want)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket file: got %v, %v; want a socket with mode 0660", fi, err)
	}

	c := client.New(strings.TrimSuffix(string(line), "\n"))
	lease, err := c.Acquire(ctx, "over-the-socket", time.Minute, client.WithOwner("a"))
	if err != nil {
		t.Fatalf("Acquire over the socket: %v", err)
	}
	if _, err := c.Acquire(ctx, "over-the-socket", time.Minute, client.WithOwner("b")); !errors.Is(err, client.ErrNotAcquired) {
		t.Errorf("second owner: got %v, want ErrNotAcquired", err)
	}
	if err := c.Release(ctx, lease); err != nil {
		t.Errorf("Release over the socket: %v", err)
	}
	// /readyz and /metrics answer as on TCP.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	for _, path := range []string{"/readyz", "/metrics"} {
		res, err := hc.Get("http://localhost" + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: got %d, want 200", path, res.StatusCode)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: got %v, want nil", err)
	}
	for _, f := range []string{sock, cfg.AddrFile} {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after stop: got %v, want it removed", f, err)
		}
	}
}

// A socket file left by a gateway that is gone is replaced; one that a
// process listens on, or a file that is not a socket, stops the start and
// stays.
func TestAUnixSocketFileIsReplacedOnlyWhenStale(t *testing.T) {
	t.Parallel()
	dir := socketDir(t)
	start := func(path string) (*server.Server, error) {
		cfg := testConfig(t)
		cfg.Addr = "unix:" + path
		return server.New(cfg, nil)
	}

	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = ln.Close()
	s, err := start(stale)
	if err != nil {
		t.Fatalf("New on a stale socket file: %v", err)
	}
	go func() { _ = s.Serve() }()
	if _, err := client.New("unix:"+stale).Acquire(context.Background(), "r", time.Minute, client.WithOwner("a")); err != nil {
		t.Errorf("Acquire through the replaced socket: %v", err)
	}
	_ = s.Shutdown(context.Background())

	live := filepath.Join(dir, "live.sock")
	other, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if s, err := start(live); err == nil || !strings.Contains(err.Error(), "listens") {
		if err == nil {
			_ = s.Shutdown(context.Background())
		}
		t.Errorf("New on a socket in use: got %v, want refused", err)
	}
	if c, err := net.Dial("unix", live); err != nil {
		t.Errorf("the other process's socket after the refused start: %v, want it still there", err)
	} else {
		_ = c.Close()
	}

	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := start(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		if err == nil {
			_ = s.Shutdown(context.Background())
		}
		t.Errorf("New on a regular file: got %v, want refused", err)
	}
	if b, err := os.ReadFile(plain); err != nil || string(b) != "data" {
		t.Errorf("the regular file after the refused start: %q, %v; want it untouched", b, err)
	}
}
