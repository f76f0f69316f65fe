package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

func TestShutdownAnswersWaiters(t *testing.T) {
	t.Parallel()
	// gatewaytest.Start's cleanup shuts down again (a no-op by then) and
	// checks what Serve returned.
	s := gatewaytest.Start(t, server.DefaultConfig(), nil)
	base := gatewaytest.URL(s)

	post := func(body string) (*http.Response, error) {
		return http.Post(base+"/locks/job", "application/json", strings.NewReader(body))
	}
	resp, err := post(`{"owner":"holder","ttl_seconds":60}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	const n = 3
	answers := make(chan map[string]any, n)
	for range n {
		go func() {
			resp, err := post(`{"owner":"waiter","ttl_seconds":60,"wait_ms":25000}`)
			if err != nil {
				answers <- map[string]any{"error": err.Error()}
				return
			}
			defer resp.Body.Close()
			var v map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&v)
			v["status"] = resp.StatusCode
			v["retry-after"] = resp.Header.Get("Retry-After")
			answers <- v
		}()
	}
	apptest.WaitFor(t, "3 waiters in /metrics", func() bool {
		return strings.Contains(metricsText(t, base), "leasegate_lock_waiters 3")
	})

	start := time.Now()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	for range n {
		select {
		case v := <-answers:
			// Told to retry through another gateway, at once.
			if v["status"] != 503 || v["type"] != "https://leasegate.dev/problems/unavailable" || v["retry-after"] != "1" {
				t.Errorf("got %v, want 503 unavailable with Retry-After: 1", v)
			}
		case <-time.After(15 * time.Second):
			// A hang guard: the waits run 25s, so an answer before this
			// came from the shutdown, not from a timed-out wait.
			t.Fatal("a waiter was not answered within 15s of shutdown")
		}
	}
	t.Logf("shutdown answered %d waiters in %v", n, time.Since(start))
}

func metricsText(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
