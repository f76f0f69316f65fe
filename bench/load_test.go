package bench_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// startGateway runs a real gateway on a free loopback port: on a real
// redis-server when redisURL is set, else on the embedded Redis.
func startGateway(t *testing.T, redisURL string) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.RedisURL = redisURL
	cfg.AbuseLog = io.Discard
	return gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
}

// countingProxy forwards to a gateway, counts every request it sees and
// answers every failEvery-th one itself with a 503 unavailable problem
// (0: never), so the load run meets errors it must count.
type countingProxy struct {
	next      http.Handler
	failEvery int

	mu sync.Mutex
	n  int
}

func newCountingProxy(t *testing.T, target string, failEvery int) (*countingProxy, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{next: httputil.NewSingleHostReverseProxy(u), failEvery: failEvery}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

func (p *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.n++
	fail := p.failEvery > 0 && p.n%p.failEvery == 0
	p.mu.Unlock()
	if fail {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"type":"https://leasegate.dev/problems/unavailable","title":"Service Unavailable","status":503,"detail":"injected by the test"}`)
		return
	}
	p.next.ServeHTTP(w, r)
}

func (p *countingProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// run runs cfg and fails the test if Run refuses it.
func run(t *testing.T, cfg bench.LoadConfig) *bench.LoadReport {
	t.Helper()
	rep, err := bench.Load(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run(%+v): %v", cfg, err)
	}
	return rep
}

func checkSumsAddUp(t *testing.T, rep *bench.LoadReport) {
	t.Helper()
	if rep.Requests != rep.Successes+rep.Errors {
		t.Errorf("got requests %d, want successes %d + errors %d", rep.Requests, rep.Successes, rep.Errors)
	}
	var kinds, ops int64
	for _, n := range rep.ErrorKinds {
		kinds += n
	}
	for _, o := range rep.Operations {
		ops += o.Count
	}
	if kinds != rep.Errors {
		t.Errorf("got errors by kind adding up to %d, want %d", kinds, rep.Errors)
	}
	if ops != rep.Requests {
		t.Errorf("got operation counts adding up to %d, want %d requests", ops, rep.Requests)
	}
}

func TestLoadHonoursTheRequestBoundExactly(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, "")
	for _, tc := range []struct {
		scenario                         bench.Scenario
		concurrency, resources, requests int
	}{
		// One resource for four workers: acquires are contended, so
		// iterations give back their release slot and the last slot
		// can be odd.
		{bench.AcquireRelease, 4, 1, 37},
		{bench.Contended, 4, 2, 41},
		{bench.UserLock, 3, 2, 25},
	} {
		t.Run(string(tc.scenario)+" sends exactly Requests requests, every fifth failing", func(t *testing.T) {
			proxy, target := newCountingProxy(t, gw, 5)
			cfg := bench.DefaultLoadConfig()
			cfg.URL, cfg.Scenario, cfg.Requests, cfg.Duration = target, tc.scenario, tc.requests, 5*time.Minute
			cfg.Concurrency, cfg.Resources = tc.concurrency, tc.resources
			rep := run(t, cfg)
			if got := proxy.count(); got != tc.requests {
				t.Errorf("got %d requests at the gateway, want exactly %d", got, tc.requests)
			}
			if rep.Requests != int64(tc.requests) {
				t.Errorf("got %d requests in the report, want %d", rep.Requests, tc.requests)
			}
			if rep.StoppedBy != "requests" {
				t.Errorf("got stopped by %q, want requests", rep.StoppedBy)
			}
			checkSumsAddUp(t, rep)
			want := int64(tc.requests / 5)
			if got := rep.ErrorKinds["503 unavailable"]; got != want || rep.Errors != want {
				t.Errorf("got %d errors (%v), want %d, all 503 unavailable", rep.Errors, rep.ErrorKinds, want)
			}
			if rep.Fencing != nil && rep.Fencing.Violations != 0 {
				t.Errorf("got %d fencing violations (%v), want none", rep.Fencing.Violations, rep.Fencing.Examples)
			}
			if tc.scenario == bench.UserLock {
				if ul := rep.UserLocks; ul == nil || ul.Acquired+ul.Repeated != rep.Successes {
					t.Errorf("got user locks %+v, want acquired+repeated = %d successes", ul, rep.Successes)
				}
			} else if rep.Acquired == 0 || rep.Fencing == nil || rep.Fencing.Grants != rep.Acquired {
				t.Errorf("got %d acquired, fencing %+v, want some acquired, each checked", rep.Acquired, rep.Fencing)
			}
		})
	}
}

func TestLoadStopsByItselfAfterTheDuration(t *testing.T) {
	t.Parallel()
	gw := startGateway(t, "")
	cfg := bench.DefaultLoadConfig()
	cfg.URL, cfg.Duration, cfg.Concurrency = gw, 300*time.Millisecond, 2
	rep := run(t, cfg)
	if rep.StoppedBy != "duration" || rep.Requests == 0 || rep.Scenario != bench.AcquireRelease {
		t.Errorf("got %s run stopped by %q after %d requests, want an acquire-release run stopped by duration", rep.Scenario, rep.StoppedBy, rep.Requests)
	}
	checkSumsAddUp(t, rep)
	if rep.Errors != 0 {
		t.Errorf("got errors %v, want none", rep.ErrorKinds)
	}
	if rep.Fencing == nil || rep.Fencing.Violations != 0 {
		t.Errorf("got fencing %+v, want checked and no violation", rep.Fencing)
	}
}

func TestLoadContendedOnARealRedisHasNoFencingViolations(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := bench.DefaultLoadConfig()
	cfg.URL, cfg.Scenario, cfg.Concurrency, cfg.Resources = startGateway(t, srv.URL()), bench.Contended, 8, 2
	cfg.Requests, cfg.TTL = 400, 5*time.Second
	rep := run(t, cfg)
	checkSumsAddUp(t, rep)
	if rep.Requests != 400 || rep.Errors != 0 {
		t.Errorf("got %d requests, errors %v, want 400 and none", rep.Requests, rep.ErrorKinds)
	}
	if rep.Fencing == nil || rep.Fencing.Violations != 0 || rep.Fencing.Grants != rep.Acquired || rep.Acquired == 0 {
		t.Errorf("got fencing %+v for %d acquired, want every grant checked and no violation", rep.Fencing, rep.Acquired)
	}
}

func TestLoadFencingCheckFailsOnAGatewayThatReusesATokenForTwoOwners(t *testing.T) {
	t.Parallel()
	for _, c := range []int{1, 4} {
		t.Run(fmt.Sprintf("with %d workers", c), func(t *testing.T) {
			cfg := bench.DefaultLoadConfig()
			cfg.URL, cfg.Scenario, cfg.Concurrency, cfg.Requests = gatewaytest.StartTokenReuser(t), bench.Contended, c, 20
			rep := run(t, cfg)
			if rep.Fencing == nil || rep.Fencing.Violations == 0 || len(rep.Fencing.Examples) == 0 {
				t.Fatalf("got fencing %+v, want violations with examples", rep.Fencing)
			}
			reused := fmt.Sprintf("token %d, not above %d", gatewaytest.ReusedToken, gatewaytest.ReusedToken)
			if !strings.Contains(rep.Fencing.Examples[0], reused) {
				t.Errorf("got example %q, want it to name the reused token (%q)", rep.Fencing.Examples[0], reused)
			}
		})
	}
}

func TestLoadConfigValidate(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(*bench.LoadConfig){
		"a non-loopback IP is refused":      func(c *bench.LoadConfig) { c.URL = "http://192.0.2.10:8080" },
		"a host name is refused":            func(c *bench.LoadConfig) { c.URL = "http://gateway.example.com" },
		"an unspecified address is refused": func(c *bench.LoadConfig) { c.URL = "http://0.0.0.0:8080" },
		"a non-HTTP URL is refused":         func(c *bench.LoadConfig) { c.URL = "ftp://127.0.0.1/" },
		"a duration above 5m is refused":    func(c *bench.LoadConfig) { c.Duration = 6 * time.Minute },
		"a zero duration is refused":        func(c *bench.LoadConfig) { c.Duration = 0 },
		"a TTL in milliseconds is refused":  func(c *bench.LoadConfig) { c.TTL = 1500 * time.Millisecond },
		"an unknown scenario is refused":    func(c *bench.LoadConfig) { c.Scenario = "chaos" },
		"zero workers are refused":          func(c *bench.LoadConfig) { c.Concurrency = 0 },
		"negative requests are refused":     func(c *bench.LoadConfig) { c.Requests = -1 },
		"negative resources are refused":    func(c *bench.LoadConfig) { c.Resources = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			proxy, target := newCountingProxy(t, "http://127.0.0.1:1", 0)
			cfg := bench.DefaultLoadConfig()
			cfg.URL = target
			edit(&cfg)
			if err := cfg.Validate(); err == nil {
				t.Errorf("got %+v accepted, want refused", cfg)
			}
			if rep, err := bench.Load(context.Background(), cfg); err == nil || rep != nil || proxy.count() != 0 {
				t.Errorf("got Run report %v, error %v, %d requests sent, want the error and no request", rep, err, proxy.count())
			}
		})
	}
	t.Run("the refusal of a remote gateway says why", func(t *testing.T) {
		cfg := bench.DefaultLoadConfig()
		cfg.URL = "http://10.1.2.3:8080"
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "not a loopback address") || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("got %v, want an error naming loopback and --allow-remote", err)
		}
		cfg.AllowRemote = true
		if err := cfg.Validate(); err != nil {
			t.Errorf("with AllowRemote: got %v, want accepted", err)
		}
	})
	for _, u := range []string{"http://127.0.0.1:8080", "http://127.9.9.9", "http://localhost:1", "http://LOCALHOST.:1", "https://[::1]:8443"} {
		t.Run(u+" is loopback", func(t *testing.T) {
			cfg := bench.DefaultLoadConfig()
			cfg.URL = u
			if err := cfg.Validate(); err != nil {
				t.Errorf("got %v, want accepted", err)
			}
		})
	}
}

// The waiting scenario runs fixed owners that wait for random names over
// two gateways of one Redis: every acquire is granted (none times out
// or is contended), every grant is checked, and the cycles are counted.
func TestLoadWaitingOverTwoGatewaysGrantsEveryAcquire(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := bench.DefaultLoadConfig()
	cfg.URL = startGateway(t, srv.URL()) + "," + startGateway(t, srv.URL())
	cfg.Scenario, cfg.Concurrency, cfg.Requests, cfg.TTL = bench.Waiting, 8, 400, 5*time.Second
	rep := run(t, cfg)
	checkSumsAddUp(t, rep)
	if rep.Requests != 400 || rep.Errors != 0 || rep.Contended != 0 || rep.Acquired != 200 {
		t.Errorf("got %d requests, %d acquired, %d contended, errors %v; want 400, 200 acquired, none contended, no errors",
			rep.Requests, rep.Acquired, rep.Contended, rep.ErrorKinds)
	}
	if rep.Resources != 4 || rep.CyclesPerSec <= 0 {
		t.Errorf("got %d resources, %.1f cycles/s; want the default 4 and a rate", rep.Resources, rep.CyclesPerSec)
	}
	if rep.Fencing == nil || rep.Fencing.Violations != 0 || rep.Fencing.Grants != rep.Acquired {
		t.Errorf("got fencing %+v for %d acquired, want every grant checked and no violation", rep.Fencing, rep.Acquired)
	}
}
