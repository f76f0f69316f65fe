package deploy

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The rolling-restart proof of the shipped load-balancer configurations
// (haproxy/haproxy.cfg, nginx/nginx.conf; docs/deployment.md): three
// gateway processes on one redis-server behind the balancer, 16 clients
// cycling acquire and release through it, and each gateway in turn
// stopped with SIGTERM, started again and ready. Every call must
// succeed. The CI run restarts each gateway once; the long run
// (-rolling.duration) measures a window without restarts first and
// reports both p99s:
//
//	go test ./deploy/ -run TestRollingRestart -rolling.duration=60s -v -timeout 0
var rollingDuration = flag.Duration("rolling.duration", 0, "run each rolling-restart test this long with restarts, after a baseline window as long without (0: one restart of each gateway, no baseline)")

const rollingClients = 16

// The pattern the shipped files use for what a deployment changes; the
// test puts loopback addresses in their place and nothing else.
const (
	shippedListen = "0.0.0.0:8080"
	shippedStats  = "127.0.0.1:8404"
)

var shippedGateways = []string{"10.0.0.11:8080", "10.0.0.12:8080", "10.0.0.13:8080"}

// balancer is one shipped configuration: how to start it on the
// addresses given, and how to tell that it sends calls to a gateway
// again after its restart.
type balancer struct {
	name, file string
	// drain is the gateways' --drain-delay: longer than the balancer
	// takes to see /readyz fail, for one that checks it.
	drain time.Duration
	start func(t *testing.T, dir, cfg string) *exec.Cmd
}

func TestRollingRestartBehindHAProxy(t *testing.T) {
	t.Parallel()
	bin := tool(t, "haproxy")
	rollingRestart(t, balancer{
		name: "haproxy", file: "haproxy/haproxy.cfg",
		// inter 1s, fastinter 500ms, fall 2: out within about 2.5 s.
		drain: 4 * time.Second,
		start: func(t *testing.T, dir, cfg string) *exec.Cmd {
			cfg = replaceOnce(t, cfg, shippedStats, redistest.FreeAddr(t))
			path := filepath.Join(dir, "haproxy.cfg")
			writeFile(t, path, cfg)
			run(t, dir, bin, "-c", "-q", "-f", path)
			return exec.Command(bin, "-db", "-f", path)
		},
	})
}

func TestRollingRestartBehindNginx(t *testing.T) {
	t.Parallel()
	bin := tool(t, "nginx")
	rollingRestart(t, balancer{
		name: "nginx", file: "nginx/nginx.conf",
		// nginx asks no health check: the drain only has to let the
		// keep-alive connections go (each answer closes its own, and
		// keepalive_timeout 2s the idle ones).
		drain: 3 * time.Second,
		start: func(t *testing.T, dir, cfg string) *exec.Cmd {
			path := filepath.Join(dir, "nginx.conf")
			writeFile(t, path, cfg)
			errLog := filepath.Join(dir, "error.log")
			g := "daemon off; pid " + filepath.Join(dir, "nginx.pid") + ";"
			run(t, dir, bin, "-t", "-q", "-p", dir, "-e", errLog, "-c", path, "-g", g)
			return exec.Command(bin, "-p", dir, "-e", errLog, "-c", path, "-g", g)
		},
	})
}

func rollingRestart(t *testing.T, b balancer) {
	rs := redistest.Start(t)
	gws := make([]*gatewaytest.Process, len(shippedGateways))
	for i := range gws {
		gws[i] = gatewaytest.StartProcess(t, "--redis-url", rs.URL(), "--drain-delay", b.drain.String(),
			"--log-level", "error", "--abuse-log", "stderr")
	}
	shipped, err := os.ReadFile(b.file)
	if err != nil {
		t.Fatal(err)
	}
	front := redistest.FreeAddr(t)
	cfg := replaceOnce(t, string(shipped), shippedListen, front)
	for i, g := range gws {
		cfg = replaceOnce(t, cfg, shippedGateways[i], g.Addr)
	}
	dir := t.TempDir()
	cmd := b.start(t, dir, cfg)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", b.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		if t.Failed() {
			errLog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("%s output:\n%s%s", b.name, out.String(), tail(string(errLog), 20))
		}
	})
	base := "http://" + front
	redistest.Eventually(t, 20*time.Second, b.name+" to pass calls", func() bool {
		time.Sleep(20 * time.Millisecond)
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	restartAll := func() {
		for _, g := range gws {
			g.Stop(syscall.SIGTERM, b.drain+20*time.Second)
			g.Start()
			// As a rolling restart should: on to the next gateway once
			// the balancer sends calls to this one again.
			redistest.Eventually(t, 30*time.Second, b.name+" to send calls to "+g.Addr+" again", func() bool {
				time.Sleep(50 * time.Millisecond) // its /metrics, not a busy loop
				return released(g.Addr) > 0
			})
		}
	}
	if *rollingDuration <= 0 {
		l := startLoad(t, base)
		restartAll()
		rep := l.stop()
		t.Logf("%s, %d gateways restarted in turn: %s", b.name, len(gws), rep)
		rep.mustNotFail(t)
		return
	}
	l := startLoad(t, base)
	time.Sleep(*rollingDuration) // the baseline window: the load runs
	baseline := l.stop()
	l = startLoad(t, base)
	rounds := 0
	for end := time.Now().Add(*rollingDuration); time.Now().Before(end); rounds++ {
		restartAll()
	}
	restarts := l.stop()
	t.Logf("%s, no restarts: %s", b.name, baseline)
	t.Logf("%s, %d rounds of %d rolling restarts: %s (p99 %.2fx the baseline's)", b.name, rounds, len(gws), restarts,
		float64(restarts.p99)/float64(baseline.p99))
	baseline.mustNotFail(t)
	restarts.mustNotFail(t)
}

// load is rollingClients clients, each cycling acquire and release of a
// lock (or, every other client, a lock set) of its own through the
// balancer with a keep-alive connection, and
// no retries of their own: a call fails unless its first answer is the
// expected one.
type load struct {
	quit chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	latencies []time.Duration
	failures  []string
	failed    int
}

func startLoad(t *testing.T, base string) *load {
	l := &load{quit: make(chan struct{})}
	tr := &http.Transport{MaxIdleConnsPerHost: rollingClients}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	for i := range rollingClients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			name := fmt.Sprintf("rolling-%d-%d", time.Now().UnixNano(), i)
			url := base + "/locks/" + name
			acquire := fmt.Sprintf(`{"owner":"client-%d","ttl_seconds":30}`, i)
			release := fmt.Sprintf(`{"owner":"client-%d"}`, i)
			released := http.StatusNoContent
			if i%2 == 1 {
				// A lock set: a POST that nginx does not retry once sent.
				url = base + "/locks"
				set := fmt.Sprintf(`"resources":["%s-a","%s-b"]`, name, name)
				acquire = fmt.Sprintf(`{"owner":"client-%d","ttl_seconds":30,%s}`, i, set)
				release = fmt.Sprintf(`{"owner":"client-%d",%s}`, i, set)
				released = http.StatusOK
			}
			for {
				select {
				case <-l.quit:
					return
				default:
				}
				l.call(hc, http.MethodPost, url, acquire, http.StatusOK)
				l.call(hc, http.MethodDelete, url, release, released)
			}
		}()
	}
	return l
}

func (l *load) call(hc *http.Client, method, url, body string, want int) {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := hc.Do(req)
	var answer []byte
	if err == nil {
		answer, err = io.ReadAll(res.Body)
		_ = res.Body.Close()
	}
	took := time.Since(start)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies = append(l.latencies, took)
	switch {
	case err != nil:
		err = fmt.Errorf("%s: %w", method, err)
	case res.StatusCode != want:
		err = fmt.Errorf("%s: got %d %s, want %d", method, res.StatusCode, strings.TrimSpace(string(answer)), want)
	case method == http.MethodPost:
		var v struct{ Acquired bool }
		if json.Unmarshal(answer, &v) != nil || !v.Acquired {
			err = fmt.Errorf("POST: got %s, want acquired", answer)
		}
	}
	if err != nil {
		l.failed++
		if len(l.failures) < 10 {
			l.failures = append(l.failures, time.Now().Format("15:04:05.000")+" "+err.Error())
		}
	}
}

// rollingReport is what a load saw.
type rollingReport struct {
	calls, failed int
	p50, p99, max time.Duration
	failures      []string
}

func (r rollingReport) String() string {
	return fmt.Sprintf("%d calls, %d failed, p50 %v, p99 %v, max %v", r.calls, r.failed,
		r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.max.Round(10*time.Microsecond))
}

func (r rollingReport) mustNotFail(t *testing.T) {
	t.Helper()
	if r.calls == 0 {
		t.Fatal("no call was made")
	}
	if r.failed > 0 {
		t.Errorf("got %d failed calls of %d, want 0; the first:\n%s", r.failed, r.calls, strings.Join(r.failures, "\n"))
	}
}

func (l *load) stop() rollingReport {
	close(l.quit)
	l.wg.Wait()
	d := slices.Clone(l.latencies)
	slices.Sort(d)
	r := rollingReport{calls: len(d), failed: l.failed, failures: l.failures}
	if len(d) > 0 {
		r.p50, r.p99, r.max = d[len(d)/2], d[len(d)*99/100], d[len(d)-1]
	}
	return r
}

// released is how many releases gateway addr has answered since it
// started (its lock_releases_total{result="released"}).
func released(addr string) int {
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, `leasegate_lock_releases_total{result="released"} `); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// replaceOnce replaces old, which must occur exactly once in s.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("the shipped configuration has %q %d times, want once", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
