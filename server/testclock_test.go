package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

func TestTheTestClockIsRefusedWithARealRedis(t *testing.T) {
	t.Parallel()
	for _, set := range []func(*server.Config){
		func(c *server.Config) { c.RedisURL = "redis://127.0.0.1:1" },
		func(c *server.Config) { c.Redis.ClusterAddrs = []string{"127.0.0.1:1"} },
		func(c *server.Config) { c.Redis.SentinelMaster, c.Redis.SentinelAddrs = "m", []string{"127.0.0.1:1"} },
	} {
		cfg := server.DefaultConfig()
		cfg.EmbeddedRedisTestClock = true
		set(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), "embedded-redis-test-clock is for tests on the embedded store only") {
			t.Errorf("got %v, want the test clock refused", err)
		}
	}
}

func postClock(t *testing.T, s *server.Server, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(gatewaytest.URL(s)+"/ops/test-clock", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return res.StatusCode, out
}

func TestTheTestClockRouteExistsOnlyWithTheFlag(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.AbuseLog = io.Discard
	s := gatewaytest.Start(t, cfg, nil)
	if code, _ := postClock(t, s, `{"advance_ms":1000}`); code != http.StatusNotFound {
		t.Errorf("got %d, want 404 on a gateway without --embedded-redis-test-clock", code)
	}
	if _, err := s.AdvanceClock(time.Second); err == nil {
		t.Error("AdvanceClock moved the clock of a gateway without the flag")
	}
}

func TestTheTestClockMovesTheStoresTime(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.AbuseLog = io.Discard
	cfg.EmbeddedRedisTestClock = true
	s := gatewaytest.Start(t, cfg, nil)
	if code, p := postClock(t, s, `{"advance_ms":0}`); code != http.StatusUnprocessableEntity || !strings.Contains(p["detail"].(string), "advance_ms") {
		t.Errorf("got %d %v, want 422 naming advance_ms", code, p)
	}
	code, out := postClock(t, s, `{"advance_ms":3600000}`)
	if code != http.StatusOK {
		t.Fatalf("got %d %v, want 200", code, out)
	}
	now, err := time.Parse(time.RFC3339Nano, out["now"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// The store's clock is an hour ahead of the real one: a bound far
	// from both sides of it, whatever the machine's load.
	if d := time.Until(now); d < 50*time.Minute || d > 70*time.Minute {
		t.Errorf("got the store's time %v from now, want about an hour", d)
	}
}
