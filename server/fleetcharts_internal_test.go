package server

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
)

// TestTheOpsChartsAreTheFleets: two gateways on one redis-server, as
// behind a load balancer. Calls go through one; the other's Locks view
// charts them, and says two gateways reported.
func TestTheOpsChartsAreTheFleets(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := fmt.Sprintf("fleet-%d:", time.Now().UnixNano())
	gateway := func() *Server {
		cfg := testConfig(t)
		cfg.RedisURL, cfg.KeyPrefix = srv.URL(), prefix
		s := start(t, cfg, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Maintain(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		return s
	}
	a, b := gateway(), gateway()

	for i := range 5 {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("http://%s/locks/fleet-%d", a.Addr(), i),
			strings.NewReader(`{"owner":"worker","ttl_seconds":60}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("acquire %d through a: got %d, want 200", i, res.StatusCode)
		}
	}

	acquires := regexp.MustCompile(`data-chart="acquires">\s*<h2>acquires <b>(\d+)</b>`)
	gateways := regexp.MustCompile(`data-gateways="(\d+)"`)
	var page string
	// Both gateways' Maintain start sharing on their own goroutines: a
	// publishes (as its 10-s tick does) until b's page shows it.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if err := a.metrics.Activity().Publish(context.Background(), time.Now()); err != nil {
			t.Fatal(err)
		}
		res, body := get(t, b, "/ops/locks", "")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET /ops/locks on b: got %d, want 200", res.StatusCode)
		}
		page = string(body)
		n, g := acquires.FindStringSubmatch(page), gateways.FindStringSubmatch(page)
		if n != nil && g != nil && n[1] == "5" && g[1] == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b's charts: got acquires %q from gateways %q, want 5 from 2", n, g)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(page, "charts: 2 gateways reporting") {
		t.Errorf("b's page does not say two gateways reported")
	}
}
