package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// startLoadGateway runs a real gateway on a free loopback port: on a real
// redis-server when redisURL is set, else on the embedded Redis.
func startLoadGateway(t *testing.T, redisURL string) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.RedisURL = redisURL
	cfg.AbuseLog = io.Discard
	return gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
}

// countingProxy forwards to a gateway, counts every request it sees and
// answers every failEvery-th one itself with a 503 unavailable problem
// (0: never), so the load tool meets errors it must count.
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

// runLoadJSON runs `leasegate load --json args...` and decodes the summary.
func runLoadJSON(t *testing.T, env map[string]string, args ...string) (cliResult, loadSummary) {
	t.Helper()
	r := runCLI(t, env, append([]string{"load", "--json"}, args...)...)
	var sum loadSummary
	if err := json.Unmarshal([]byte(r.stdout), &sum); err != nil {
		t.Fatalf("exit %d, stdout %q, stderr %q: not a JSON summary: %v", r.code, r.stdout, r.stderr, err)
	}
	return r, sum
}

func checkSumsAddUp(t *testing.T, sum loadSummary) {
	t.Helper()
	if sum.Requests != sum.Successes+sum.Errors {
		t.Errorf("got requests %d, want successes %d + errors %d", sum.Requests, sum.Successes, sum.Errors)
	}
	var kinds, ops int64
	for _, n := range sum.ErrorKinds {
		kinds += n
	}
	for _, o := range sum.Operations {
		ops += o.Count
	}
	if kinds != sum.Errors {
		t.Errorf("got errors by kind adding up to %d, want %d", kinds, sum.Errors)
	}
	if ops != sum.Requests {
		t.Errorf("got operation counts adding up to %d, want %d requests", ops, sum.Requests)
	}
}

func TestLoadHonoursTheRequestBoundExactly(t *testing.T) {
	gw := startLoadGateway(t, "")
	for _, tc := range []struct {
		scenario string
		args     []string
		requests int
	}{
		// One resource for four workers: acquires are contended, so
		// iterations give back their release slot and the last slot
		// can be odd.
		{scenarioAcquireRelease, []string{"--concurrency", "4", "--resources", "1"}, 37},
		{scenarioContended, []string{"--concurrency", "4", "--resources", "2"}, 41},
		{scenarioUserLock, []string{"--concurrency", "3", "--resources", "2"}, 25},
	} {
		t.Run(tc.scenario+" sends exactly --requests requests, every fifth failing", func(t *testing.T) {
			proxy, target := newCountingProxy(t, gw, 5)
			args := append([]string{"--url", target, "--scenario", tc.scenario, "--requests", fmt.Sprint(tc.requests), "--duration", "5m"}, tc.args...)
			r, sum := runLoadJSON(t, nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if got := proxy.count(); got != tc.requests {
				t.Errorf("got %d requests at the gateway, want exactly %d", got, tc.requests)
			}
			if sum.Requests != int64(tc.requests) {
				t.Errorf("got %d requests in the summary, want %d", sum.Requests, tc.requests)
			}
			if sum.StoppedBy != "requests" {
				t.Errorf("got stopped by %q, want requests", sum.StoppedBy)
			}
			checkSumsAddUp(t, sum)
			want := int64(tc.requests / 5)
			if got := sum.ErrorKinds["503 unavailable"]; got != want || sum.Errors != want {
				t.Errorf("got %d errors (%v), want %d, all 503 unavailable", sum.Errors, sum.ErrorKinds, want)
			}
			if sum.Fencing != nil && sum.Fencing.Violations != 0 {
				t.Errorf("got %d fencing violations (%v), want none", sum.Fencing.Violations, sum.Fencing.Examples)
			}
			if tc.scenario == scenarioUserLock {
				if ul := sum.UserLocks; ul == nil || ul.Acquired+ul.Repeated != sum.Successes {
					t.Errorf("got user locks %+v, want acquired+repeated = %d successes", ul, sum.Successes)
				}
			} else if sum.Acquired == 0 || sum.Fencing == nil || sum.Fencing.Grants != sum.Acquired {
				t.Errorf("got %d acquired, fencing %+v, want some acquired, each checked", sum.Acquired, sum.Fencing)
			}
		})
	}
}

func TestLoadStopsByItselfAfterTheDuration(t *testing.T) {
	gw := startLoadGateway(t, "")
	r, sum := runLoadJSON(t, map[string]string{"LEASEGATE_URL": gw, "LEASEGATE_DURATION": "300ms"}, "--concurrency", "2")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if sum.StoppedBy != "duration" || sum.Requests == 0 || sum.Scenario != scenarioAcquireRelease {
		t.Errorf("got %s run stopped by %q after %d requests, want an acquire-release run stopped by duration", sum.Scenario, sum.StoppedBy, sum.Requests)
	}
	checkSumsAddUp(t, sum)
	if sum.Errors != 0 {
		t.Errorf("got errors %v, want none", sum.ErrorKinds)
	}
}

func TestLoadPrintsAReadableSummary(t *testing.T) {
	gw := startLoadGateway(t, "")
	r := runCLI(t, nil, "load", "--url", gw, "--requests", "20", "--scenario", "contended")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^requests +20 +\(successes 20, errors 0\)`).MatchString(r.stdout) {
		t.Errorf("got\n%s\nwant a line with 20 requests, all successes", r.stdout)
	}
	for _, want := range []string{"stopped by requests", "throughput", "acquire", "p99 ms", "fencing check: 0 violations"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("got\n%s\nwant it to contain %q", r.stdout, want)
		}
	}
}

func TestLoadContendedOnARealRedisHasNoFencingViolations(t *testing.T) {
	srv := redistest.Start(t)
	gw := startLoadGateway(t, srv.URL())
	r, sum := runLoadJSON(t, nil, "--url", gw, "--scenario", "contended", "--concurrency", "8", "--resources", "2", "--requests", "400", "--ttl", "5s")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	checkSumsAddUp(t, sum)
	if sum.Requests != 400 || sum.Errors != 0 {
		t.Errorf("got %d requests, errors %v, want 400 and none", sum.Requests, sum.ErrorKinds)
	}
	if sum.Fencing == nil || sum.Fencing.Violations != 0 || sum.Fencing.Grants != sum.Acquired || sum.Acquired == 0 {
		t.Errorf("got fencing %+v for %d acquired, want every grant checked and no violation", sum.Fencing, sum.Acquired)
	}
}

// tokenReusingGateway grants every acquire, always with the same token:
// two owners in a row are told they hold the same resource.
func tokenReusingGateway(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resource := strings.TrimPrefix(r.URL.Path, "/locks/")
		switch r.Method {
		case http.MethodPost:
			var body struct {
				Owner string `json:"owner"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			now := time.Now().UTC()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"acquired": true, "lock": map[string]any{
				"resource": resource, "owner": body.Owner, "token": 7,
				"acquired_at": now, "expires_at": now.Add(10 * time.Second),
			}})
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestLoadFencingCheckFailsOnAGatewayThatReusesATokenForTwoOwners(t *testing.T) {
	for _, c := range []string{"1", "4"} {
		t.Run("with "+c+" workers", func(t *testing.T) {
			gw := tokenReusingGateway(t)
			r, sum := runLoadJSON(t, map[string]string{"LEASEGATE_SCENARIO": "contended"}, "--url", gw, "--concurrency", c, "--requests", "20")
			if r.code != 1 {
				t.Errorf("got exit %d, want 1", r.code)
			}
			if !strings.Contains(r.stderr, "fencing violations") {
				t.Errorf("got stderr %q, want it to report fencing violations", r.stderr)
			}
			if sum.Fencing == nil || sum.Fencing.Violations == 0 || len(sum.Fencing.Examples) == 0 {
				t.Fatalf("got fencing %+v, want violations with examples", sum.Fencing)
			}
			if !strings.Contains(sum.Fencing.Examples[0], "token 7, not above 7") {
				t.Errorf("got example %q, want it to name the reused token", sum.Fencing.Examples[0])
			}
		})
	}
}

func TestFenceTracker(t *testing.T) {
	t0 := time.Now()
	t.Run("a grant while another owner holds the resource is a violation", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0, time.Minute)
		tr.grant("r", "b", 2, t0, time.Minute)
		if tr.violations != 1 || !strings.Contains(tr.shown[0], "while a still held token 1") {
			t.Errorf("got %d violations %q, want one naming a as the holder", tr.violations, tr.shown)
		}
	})
	t.Run("a grant after the holder let go is fine", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0, time.Minute)
		tr.drop("r", "a")
		tr.grant("r", "b", 2, t0, time.Minute)
		tr.grant("other", "c", 1, t0, time.Minute)
		if tr.violations != 0 || tr.grants != 3 {
			t.Errorf("got %d violations %q in %d grants, want none in 3", tr.violations, tr.shown, tr.grants)
		}
	})
	t.Run("a grant after the holder's lease ended by the local clock is fine", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0.Add(-2*time.Second), time.Second)
		tr.grant("r", "b", 2, t0, time.Minute)
		if tr.violations != 0 {
			t.Errorf("got violations %q, want none", tr.shown)
		}
	})
	t.Run("a token not above the previous holder's is a violation", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 5, t0, time.Minute)
		tr.drop("r", "a")
		tr.grant("r", "b", 5, t0, time.Minute)
		tr.drop("r", "b")
		tr.grant("r", "c", 4, t0, time.Minute)
		if tr.violations != 2 {
			t.Errorf("got %d violations %q, want 2", tr.violations, tr.shown)
		}
	})
}

func TestHistogramQuantilesAreWithinOneBucket(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, time.Millisecond}} {
		got := h.quantile(tc.q)
		if got < tc.want || got > tc.want+tc.want/histSub {
			t.Errorf("got p%v = %v, want %v to %v", tc.q*100, got, tc.want, tc.want+tc.want/histSub)
		}
	}
	if h.max != time.Millisecond || h.n != 1000 {
		t.Errorf("got max %v of %d samples, want 1ms of 1000", h.max, h.n)
	}
	for v := int64(0); v < 1<<20; v += 7 {
		if b := histBucket(v); histUpper(b) < v || (b > 0 && histUpper(b-1) >= v) {
			t.Fatalf("got %d in bucket %d [..%d], previous bucket ends at %d", v, b, histUpper(b), histUpper(b-1))
		}
	}
}

func TestLoadUsage(t *testing.T) {
	for name, args := range map[string][]string{
		"a non-loopback IP is refused":          {"--url", "http://192.0.2.10:8080"},
		"a host name is refused":                {"--url", "http://gateway.example.com"},
		"an unspecified address is refused":     {"--url", "http://0.0.0.0:8080"},
		"a non-HTTP URL is refused":             {"--url", "ftp://127.0.0.1/"},
		"a duration above 5m is refused":        {"--duration", "6m"},
		"a zero duration is refused":            {"--duration", "0s"},
		"a TTL in milliseconds is refused":      {"--ttl", "1500ms"},
		"an unknown scenario is refused":        {"--scenario", "chaos"},
		"zero workers are refused":              {"--concurrency", "0"},
		"negative requests are refused":         {"--requests", "-1"},
		"arguments after the flags are refused": {"extra"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"load"}, args...)...)
			if r.code != 2 || r.stdout != "" {
				t.Errorf("got exit %d, stdout %q, want 2 and no summary (stderr %q)", r.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("the refusal of a remote gateway says why", func(t *testing.T) {
		r := runCLI(t, map[string]string{"LEASEGATE_URL": "http://10.1.2.3:8080"}, "load")
		if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") || !strings.Contains(r.stderr, "--allow-remote") {
			t.Errorf("got exit %d, stderr %q, want 2 naming loopback and --allow-remote", r.code, r.stderr)
		}
	})
	for _, u := range []string{"http://127.0.0.1:8080", "http://127.9.9.9", "http://localhost:1", "http://LOCALHOST.:1", "https://[::1]:8443"} {
		t.Run(u+" is loopback", func(t *testing.T) {
			if err := checkLoopbackURL(u); err != nil {
				t.Errorf("got %v, want accepted", err)
			}
		})
	}
}

// TestConfigurationDocListsEveryLoadFlag keeps the `leasegate load` table
// of docs/configuration.md equal to the flags: every flag has one row with
// its environment variable and default, and every row names a real flag.
func TestConfigurationDocListsEveryLoadFlag(t *testing.T) {
	var f loadFlags
	fs := loadFlagSet(&f)
	rows := readFlagTable(t, configDoc, "## `leasegate load`")
	documented := map[string]flagRow{}
	for _, r := range rows {
		name, ok := strings.CutPrefix(r.flag, "--")
		if _, dup := documented[name]; !ok || dup || fs.Lookup(name) == nil || r.meaning == "" {
			t.Errorf("%s:%d: got row for %q, want each `--flag` of leasegate load once, with a meaning", configDoc, r.line, r.flag)
			continue
		}
		documented[name] = r
	}
	fs.VisitAll(func(fl *flag.Flag) {
		r, ok := documented[fl.Name]
		switch {
		case !ok:
			t.Errorf("--%s (%s) is not documented in %s", fl.Name, fl.Usage, configDoc)
		case r.env != envName(fl.Name):
			t.Errorf("%s:%d: --%s: got env %q, want %q", configDoc, r.line, fl.Name, r.env, envName(fl.Name))
		case !sameDefault(r.defValue, fl.DefValue):
			t.Errorf("%s:%d: --%s: got default %q, want %q", configDoc, r.line, fl.Name, r.defValue, fl.DefValue)
		}
	})
}
