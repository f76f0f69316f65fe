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
// at --request-timeout, not at go-redis's own read timeout, and a waiting
// acquire is answered when its wait_ms is over, never with a grant.
func TestAStalledRedisIsAnsweredOnTime(t *testing.T) {
	srv := redistest.Start(t)
	// Generous, for a loaded machine; both bounds stay well under what the
	// gateway took before (3 s and 5 s).
	const slack = 750 * time.Millisecond

	plainCfg := server.DefaultConfig()
	plainCfg.Addr = "127.0.0.1:0"
	plainCfg.RedisURL = srv.URL()
	plainCfg.HTTP.RequestTimeout = time.Second
	plain := newServer(t, plainCfg)

	waitCfg := server.DefaultConfig() // --request-timeout 5s
	waitCfg.Addr = "127.0.0.1:0"
	waitCfg.RedisURL = srv.URL()
	waiting := newServer(t, waitCfg)

	if code := testenv.Do(t, plain.Handler(), http.MethodPost, "/locks/held", `{"owner":"a","ttl_seconds":60}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/held: got %d, want 200", code)
	}
	if code := testenv.Do(t, waiting.Handler(), http.MethodGet, "/locks/held", "").StatusCode; code != http.StatusOK {
		t.Fatalf("GET /locks/held: got %d, want 200", code)
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

	t.Run("a waiting acquire is answered at the end of wait_ms, never with a grant", func(t *testing.T) {
		const wait = 500 * time.Millisecond
		start := time.Now()
		code, body := send(t, waiting, http.MethodPost, "/locks/held", `{"owner":"b","ttl_seconds":60,"wait_ms":500}`)
		took := time.Since(start)
		t.Logf("answered %d %v after %v", code, body, took)
		switch {
		case code == http.StatusServiceUnavailable:
		case code == http.StatusOK && body["acquired"] == false:
		default:
			t.Errorf("got %d %v, want 503 or 200 contended", code, body)
		}
		if took > wait+2*slack {
			t.Errorf("answered after %v, want within wait_ms %v (+%v)", took, wait, 2*slack)
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
