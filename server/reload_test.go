package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/internal/redistest"
)

const (
	oldKey = "reload-test-old-key-00001"
	newKey = "reload-test-new-key-00002"
)

func writeKeys(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// statusWith is the status of GET /locks/reload with key: 401 when the
// key is refused, 404 (no such lock) when it is accepted.
func statusWith(t *testing.T, addr, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/locks/reload", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}

func TestReloadKeys(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, file, "old:client:t1:"+auth.HashKey(oldKey)+"\n")
	cfg := testConfig(t)
	cfg.APIKeysFile = file
	s := start(t, cfg, nil)
	if got := statusWith(t, s.Addr(), oldKey); got != http.StatusNotFound {
		t.Fatalf("old key before reload: got %d, want 404 (accepted)", got)
	}

	t.Run("a new file replaces the keys at once", func(t *testing.T) {
		writeKeys(t, file, "new:client:t1:"+auth.HashKey(newKey)+"\n")
		if err := s.ReloadKeys(); err != nil {
			t.Fatalf("ReloadKeys: %v", err)
		}
		if got := statusWith(t, s.Addr(), oldKey); got != http.StatusUnauthorized {
			t.Errorf("old key: got %d, want 401", got)
		}
		if got := statusWith(t, s.Addr(), newKey); got != http.StatusNotFound {
			t.Errorf("new key: got %d, want 404 (accepted)", got)
		}
	})
	t.Run("a bad file keeps the keys in force", func(t *testing.T) {
		writeKeys(t, file, "new:root:t1:"+auth.HashKey(newKey)+"\n")
		if err := s.ReloadKeys(); !errors.Is(err, auth.ErrBadEntry) {
			t.Errorf("got %v, want auth.ErrBadEntry", err)
		}
		if got := statusWith(t, s.Addr(), newKey); got != http.StatusNotFound {
			t.Errorf("new key after a failed reload: got %d, want 404 (still accepted)", got)
		}
	})
	t.Run("an empty file is refused rather than locking everyone out", func(t *testing.T) {
		writeKeys(t, file, "# nothing\n")
		if err := s.ReloadKeys(); !errors.Is(err, auth.ErrNoKeys) {
			t.Errorf("got %v, want auth.ErrNoKeys", err)
		}
		if got := statusWith(t, s.Addr(), newKey); got != http.StatusNotFound {
			t.Errorf("new key after a refused reload: got %d, want 404", got)
		}
	})
	t.Run("a gateway started open cannot be switched to keys", func(t *testing.T) {
		open := start(t, testConfig(t), nil)
		if err := open.ReloadKeys(); !errors.Is(err, ErrOpenMode) {
			t.Errorf("got %v, want ErrOpenMode", err)
		}
	})
}

// Config.ReloadKeys (cmd/leasegate sends on it on SIGHUP): each value
// received reloads the keys.
func TestReloadKeysTriggerReloadsKeys(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, file, "old:client:t1:"+auth.HashKey(oldKey)+"\n")
	cfg := testConfig(t)
	cfg.APIKeysFile = file
	cfg.Addr = redistest.FreeAddr(t)
	reload := make(chan struct{})
	cfg.ReloadKeys = reload
	log, logs := observedLogger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	redistest.Eventually(t, 10*time.Second, "the gateway to answer", func() bool {
		c, err := net.Dial("tcp", cfg.Addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	if got := statusWith(t, cfg.Addr, oldKey); got != http.StatusNotFound {
		t.Fatalf("old key: got %d, want 404 (accepted)", got)
	}

	writeKeys(t, file, "new:client:t1:"+auth.HashKey(newKey)+"\n")
	reload <- struct{}{}
	redistest.Eventually(t, 10*time.Second, "the reload log line", func() bool { return logs.FilterMessage("API keys reloaded").Len() == 1 })
	if got := statusWith(t, cfg.Addr, oldKey); got != http.StatusUnauthorized {
		t.Errorf("old key after the reload: got %d, want 401", got)
	}
	if got := statusWith(t, cfg.Addr, newKey); got != http.StatusNotFound {
		t.Errorf("new key after the reload: got %d, want 404 (accepted)", got)
	}
}
