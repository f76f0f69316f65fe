package server

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/auth"
)

const opsKeyT1 = "operator-test-ops-key-00001"

func opsGet(t *testing.T, s *Server, path string) string {
	t.Helper()
	res, b := get(t, s, path, opsKeyT1)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return string(b)
}

// TestOperatorToolsAreWired: the gateway lists, force-releases and audits,
// key reloads included, and counts contention by the configured classes.
func TestOperatorToolsAreWired(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, file, "oncall:ops:t1:"+auth.HashKey(opsKeyT1)+"\n")
	cfg := testConfig(t)
	cfg.APIKeysFile = file
	cfg.LockClasses = []string{"checkin:"}
	s := start(t, cfg, nil)

	do := func(method, path, body string) int {
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+opsKeyT1)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		return res.StatusCode
	}
	if got := do("POST", "/locks/checkin:1", `{"owner":"w1","ttl_seconds":60}`); got != 200 {
		t.Fatalf("acquire: %d", got)
	}
	if got := do("DELETE", "/locks/checkin:1", `{"owner":"w1"}`); got != 204 {
		t.Fatalf("release: %d", got)
	}
	if got := do("POST", "/locks/checkin:1", `{"owner":"w2","ttl_seconds":60}`); got != 200 {
		t.Fatalf("acquire: %d", got)
	}
	if list := opsGet(t, s, "/locks?prefix=checkin"); !strings.Contains(list, `"owner":"w2"`) {
		t.Errorf("GET /locks: %s, want w2's lease", list)
	}
	if got := do("DELETE", "/locks/checkin:1?force=true", `{"reason":"stuck"}`); got != 200 {
		t.Fatalf("forced release: %d", got)
	}
	if err := s.ReloadKeys(); err != nil {
		t.Fatal(err)
	}
	trail := opsGet(t, s, "/audit")
	for _, want := range []string{`"action":"key-reload"`, `"actor":"signal"`, `"action":"force-release"`, `"actor":"oncall"`} {
		if !strings.Contains(trail, want) {
			t.Errorf("audit trail %s lacks %s", trail, want)
		}
	}
	m := opsGet(t, s, "/metrics")
	for _, want := range []string{
		`leasegate_lock_hold_seconds_count{class="checkin:"} 2`,
		`leasegate_lock_force_releases_total{class="checkin:"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if swept, err := s.operator.Sweep(ctx, "t1", 10); err != nil || swept.Removed != 0 {
		t.Errorf("Sweep: %+v, %v; want nothing stale (releases took their entries out)", swept, err)
	}
}

// TestEventStreamsOutliveTheWriteTimeout: --write-timeout bounds answers,
// not event streams, which keep their heartbeats going past it.
func TestEventStreamsOutliveTheWriteTimeout(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTP.MaxWait = 200 * time.Millisecond
	cfg.HTTP.RequestTimeout = 200 * time.Millisecond
	cfg.WriteTimeout = 500 * time.Millisecond
	cfg.HTTP.EventsHeartbeat = 50 * time.Millisecond
	s := start(t, cfg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr()+"/locks/long/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	opened := time.Now()
	buf := make([]byte, 4096)
	beats := 0
	for time.Since(opened) < 3*cfg.WriteTimeout {
		n, err := res.Body.Read(buf)
		if err != nil {
			t.Fatalf("the stream ended after %v (%d heartbeats): %v", time.Since(opened), beats, err)
		}
		beats += strings.Count(string(buf[:n]), ": heartbeat")
	}
	if beats == 0 {
		t.Error("no heartbeat")
	}
}
