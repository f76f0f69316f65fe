package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/testenv"
	"github.com/leasegate/leasegate/server"
)

// TestAStalledRedisIsAnsweredOnTime: with Redis frozen (SIGSTOP: it keeps
// its connections and answers nothing), a plain request is answered 503
// at --request-timeout, not at go-redis's own read timeout, and so is a
// waiting acquire whose try hangs: the end of wait_ms does not cut a try
// short (it could still grant the lease), so the answer comes at most one
// --request-timeout after wait_ms, and is never a grant.
func TestAStalledRedisIsAnsweredOnTime(t *testing.T) {
	srv := redistest.Start(t)
	// Generous, for a loaded machine; the bounds stay well under go-redis's
	// own read timeout (3 s).
	const slack = 750 * time.Millisecond

	plainCfg := server.DefaultConfig()
	plainCfg.Addr = "127.0.0.1:0"
	plainCfg.RedisURL = srv.URL()
	plainCfg.HTTP.RequestTimeout = time.Second
	plain := newServer(t, plainCfg)

	if code := testenv.Do(t, plain.Handler(), http.MethodPost, "/locks/held", `{"owner":"a","ttl_seconds":60}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/held: got %d, want 200", code)
	}
	srv.Pause()
	t.Cleanup(srv.Resume)

	t.Run("a plain request is 503 at the request timeout", func(t *testing.T) {
		start := time.Now()
		code, _ := send(t, plain, http.MethodGet, "/locks/held", "")
		took := time.Since(start)
		t.Logf("answered %d after %v", code, took)
		if code != http.StatusServiceUnavailable {
			t.Errorf("got %d, want 503", code)
		}
		if took > plainCfg.HTTP.RequestTimeout+slack {
			t.Errorf("answered after %v, want within --request-timeout %v (+%v)", took, plainCfg.HTTP.RequestTimeout, slack)
		}
	})

	t.Run("a waiting acquire whose try hangs is 503 at the request timeout, never a grant", func(t *testing.T) {
		const wait = 500 * time.Millisecond
		start := time.Now()
		code, body := send(t, plain, http.MethodPost, "/locks/held", `{"owner":"b","ttl_seconds":60,"wait_ms":500}`)
		took := time.Since(start)
		t.Logf("answered %d %v after %v", code, body, took)
		if code != http.StatusServiceUnavailable {
			t.Errorf("got %d %v, want 503 (the try's outcome is unknown)", code, body)
		}
		if took < plainCfg.HTTP.RequestTimeout || took > wait+plainCfg.HTTP.RequestTimeout+slack {
			t.Errorf("answered after %v, want from --request-timeout %v to wait_ms + --request-timeout (+%v)", took, plainCfg.HTTP.RequestTimeout, slack)
		}
	})
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
