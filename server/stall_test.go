package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// TestAStalledRedisIsAnsweredWithinTheGrace: with Redis frozen (SIGSTOP:
// it keeps its connections and answers nothing), the first call waits
// at most --outage-grace, not --request-timeout, and is answered 503;
// from then on the node is known down and calls are answered 503 at
// once, a waiting acquire too. A waiting acquire whose try hangs is never
// a grant: the end of wait_ms does not cut a try short (it could still
// grant the lease), and the try ends at the grace.
func TestAStalledRedisIsAnsweredWithinTheGrace(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	// Generous, for a loaded machine; far under --request-timeout.
	const (
		grace = 300 * time.Millisecond
		slack = 750 * time.Millisecond
	)
	cfg := func() server.Config {
		c := server.DefaultConfig()
		c.Addr = "127.0.0.1:0"
		c.RedisURL = srv.URL()
		c.HTTP.RequestTimeout = 5 * time.Second
		c.Redis.OutageGrace = grace
		return c
	}
	plain, waiting := newServer(t, cfg()), newServer(t, cfg())
	if code := apptest.Do(t, plain.Handler(), http.MethodPost, "/locks/held", `{"owner":"a","ttl_seconds":60}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/held: got %d, want 200", code)
	}
	for _, s := range []*server.Server{plain, waiting} {
		if code := apptest.Do(t, s.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
			t.Fatalf("GET /readyz before the stall: got %d, want 200", code)
		}
	}
	srv.Pause()
	t.Cleanup(srv.Resume)

	t.Run("a plain request is 503 at the grace", func(t *testing.T) {
		start := time.Now()
		code, _ := send(t, plain, http.MethodGet, "/locks/held", "")
		took := time.Since(start)
		t.Logf("answered %d after %v", code, took)
		if code != http.StatusServiceUnavailable {
			t.Errorf("got %d, want 503", code)
		}
		if took > grace+slack {
			t.Errorf("answered after %v, want within --outage-grace %v (+%v)", took, grace, slack)
		}
	})

	t.Run("then the node is known down and a waiting acquire is 503 at once", func(t *testing.T) {
		start := time.Now()
		code, body := send(t, plain, http.MethodPost, "/locks/held", `{"owner":"b","ttl_seconds":60,"wait_ms":3000}`)
		took := time.Since(start)
		t.Logf("answered %d %v after %v", code, body, took)
		if code != http.StatusServiceUnavailable {
			t.Errorf("got %d %v, want 503", code, body)
		}
		if took >= grace {
			t.Errorf("answered after %v, want at once (under the grace %v)", took, grace)
		}
		if code := apptest.Do(t, plain.Handler(), http.MethodGet, "/readyz", "").StatusCode; code != http.StatusServiceUnavailable {
			t.Errorf("GET /readyz with the node known down: got %d, want 503", code)
		}
	})

	t.Run("a waiting acquire whose try hangs is 503 at the grace, never a grant", func(t *testing.T) {
		const wait = 100 * time.Millisecond
		start := time.Now()
		code, body := send(t, waiting, http.MethodPost, "/locks/held", `{"owner":"b","ttl_seconds":60,"wait_ms":100}`)
		took := time.Since(start)
		t.Logf("answered %d %v after %v", code, body, took)
		if code != http.StatusServiceUnavailable {
			t.Errorf("got %d %v, want 503 (the try's outcome is unknown)", code, body)
		}
		if took > wait+grace+slack {
			t.Errorf("answered after %v, want within wait_ms + --outage-grace (+%v)", took, slack)
		}
	})

	srv.Resume()
	redistest.Eventually(t, 5*time.Second, "ready again after the stall", func() bool {
		return apptest.Do(t, plain.Handler(), http.MethodGet, "/readyz", "").StatusCode == http.StatusOK
	})
	if code := apptest.Do(t, plain.Handler(), http.MethodGet, "/locks/held", "").StatusCode; code != http.StatusOK {
		t.Errorf("GET /locks/held after the stall: got %d, want 200", code)
	}
}

// send sends one request through the server's handler and returns the
// status and the decoded JSON body (nil when there is none).
func send(t *testing.T, s *server.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	var req *http.Request
	if body == "" {
		req = httptest.NewRequest(method, path, nil)
	} else {
		req = httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var v map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &v)
	return rec.Result().StatusCode, v
}
