package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

var (
	flagDuration  = flag.Duration("faults.duration", 0, "total length of a long run over every scenario (0: the short run of go test ./...)")
	flagClients   = flag.Int("faults.clients", 32, "concurrent clients")
	flagResources = flag.Int("faults.resources", 8, "resources they contend for")
	flagScenarios = flag.String("faults.scenarios", "", "comma-separated scenario names to run (default: all of the run)")
	flagReport    = flag.String("faults.report", "", "write the figures of every scenario as JSON to this file")
	flagSeed      = flag.Uint64("faults.seed", 0, "workload seed (0: from the clock)")
)

// settings are the run's sizes, from the flags.
type settings struct {
	long         bool
	perScenario  time.Duration
	rounds       int
	stall        time.Duration
	clients      int
	resources    int
	checkTimeout time.Duration
	seed         uint64
}

// shortPerScenario is the length of each scenario of the short run; its
// five scenarios run at once, beside a gateway build and the controls.
const shortPerScenario = 8 * time.Second

func runSettings(n int) settings {
	s := settings{clients: *flagClients, resources: *flagResources, seed: *flagSeed}
	if s.seed == 0 {
		s.seed = uint64(time.Now().UnixNano())
	}
	if *flagDuration <= 0 {
		s.perScenario, s.rounds, s.stall, s.checkTimeout = shortPerScenario, 2, 2*time.Second, 10*time.Second
		return s
	}
	s.long = true
	s.perScenario = *flagDuration / time.Duration(n)
	s.rounds = max(3, int(s.perScenario/(12*time.Second)))
	s.stall = 5 * time.Second
	s.checkTimeout = 20 * time.Second
	return s
}

// env is a running system under test: the gateway's base URL and the
// fault to inject, which returns once the system is whole again.
type env struct {
	base   string
	inject func(t *testing.T, round int, r *rand.Rand, w *workload) string
	// failovers, when set, are the figures of each master killed
	// (failover_test.go).
	failovers func() []failoverWindow
}

// scenario is one kind of fault. promised: the docs promise safety under
// it, so any violation fails the test; otherwise the run reports what
// breaks.
type scenario struct {
	name     string
	promised bool
	short    bool
	// failover: the scenario fails Redis over, which can undo a release
	// answered 204 (only grants wait for replicas); nowhere else can a
	// 204 be undone, so there a history that needs it is a violation.
	failover bool
	setup    func(t *testing.T, s settings) env
}

var scenarios = []scenario{
	{name: "redis-kill-aof", promised: true, short: true, setup: setupRedisKill(true)},
	{name: "redis-stall", promised: true, short: true, setup: setupStall},
	{name: "proxy", promised: true, short: true, setup: setupProxy},
	{name: "gateway-kill", promised: true, short: true, setup: setupGatewayKill},
	{name: "fleet-gateway-kill", promised: true, short: true, setup: setupFleetKill},
	{name: "redis-restart-no-persistence", promised: false, setup: setupRedisKill(false)},
	{name: "sentinel-failover-min-replicas", promised: true, failover: true, setup: setupSentinel(1)},
	{name: "sentinel-failover-no-wait", promised: false, failover: true, setup: setupSentinel(0)},
	{name: "cluster-failover-no-wait", promised: false, short: true, failover: true, setup: setupClusterFailover(0)},
	{name: "cluster-failover-min-replicas", promised: true, failover: true, setup: setupClusterFailover(1)},
	{name: "sentinel-kill-no-wait", promised: false, failover: true, setup: setupSentinelKill(0)},
	{name: "sentinel-kill-min-replicas", promised: true, failover: true, setup: setupSentinelKill(1)},
}

// aof is how the suite runs Redis where the docs promise safety.
var aof = []string{"--appendonly", "yes", "--appendfsync", "always"}

func gatewayConfig(redisURL string) server.Config {
	cfg := server.DefaultConfig()
	cfg.RedisURL = redisURL
	cfg.HTTP.RequestTimeout = requestTimeout
	cfg.AbuseLog = discard{}
	return cfg
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func inProcess(t *testing.T, cfg server.Config) string {
	t.Helper()
	return gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
}

func setupRedisKill(persist bool) func(*testing.T, settings) env {
	return func(t *testing.T, _ settings) env {
		var args []string
		if persist {
			args = aof
		}
		rs := redistest.Start(t, args...)
		return env{
			base: inProcess(t, gatewayConfig(rs.URL())),
			inject: func(t *testing.T, _ int, r *rand.Rand, _ *workload) string {
				down := jitter(r, 300*time.Millisecond, time.Second)
				rs.Kill()
				pause(context.Background(), down)
				rs.Restart()
				return fmt.Sprintf("kill -9, down %v, restart", down.Round(time.Millisecond))
			},
		}
	}
}

func setupStall(t *testing.T, s settings) env {
	rs := redistest.Start(t, aof...)
	return env{
		base: inProcess(t, gatewayConfig(rs.URL())),
		inject: func(t *testing.T, _ int, _ *rand.Rand, w *workload) string {
			rs.Pause()
			pause(context.Background(), s.stall)
			rs.Resume()
			return fmt.Sprintf("SIGSTOP %v, SIGCONT", s.stall)
		},
	}
}

func setupProxy(t *testing.T, _ settings) env {
	rs := redistest.Start(t, aof...)
	p := startProxy(t, rs.Addr())
	return env{
		base: inProcess(t, gatewayConfig("redis://"+p.addr())),
		inject: func(t *testing.T, round int, r *rand.Rand, _ *workload) string {
			ctx := context.Background()
			switch round % 3 {
			case 0:
				d := jitter(r, 100*time.Millisecond, 600*time.Millisecond)
				p.set(d, false)
				pause(ctx, 2*time.Second)
				p.set(0, false)
				return fmt.Sprintf("delay every chunk %v for 2s", d.Round(time.Millisecond))
			case 1:
				p.set(0, true)
				pause(ctx, 1500*time.Millisecond)
				p.set(0, false)
				n := p.cut()
				return fmt.Sprintf("drop everything for 1.5s, then cut %d connections", n)
			default:
				n := 0
				for i := 0; i < 3; i++ {
					n += p.cut()
					pause(ctx, 300*time.Millisecond)
				}
				return fmt.Sprintf("cut every connection 3 times (%d cut)", n)
			}
		},
	}
}

func setupSentinel(minReplicas int) func(*testing.T, settings) env {
	return func(t *testing.T, _ settings) env {
		sn, base := sentinelGateway(t, minReplicas)
		return env{
			base: base,
			inject: func(t *testing.T, _ int, _ *rand.Rand, _ *workload) string {
				waitPromotable(t, sn)
				return "SENTINEL FAILOVER to " + sn.Failover(t)
			},
		}
	}
}

// sentinelGateway starts a primary, a replica and three Sentinels, and a
// gateway that follows them with minReplicas.
func sentinelGateway(t *testing.T, minReplicas int) (*redistest.Sentinel, string) {
	t.Helper()
	sn := redistest.StartSentinel(t)
	return sn, inProcess(t, sentinelConfig(sn, minReplicas))
}

// sentinelConfig is a gateway's configuration for sn, with minReplicas.
func sentinelConfig(sn *redistest.Sentinel, minReplicas int) server.Config {
	cfg := gatewayConfig("")
	cfg.Redis.SentinelMaster = sn.MasterName
	cfg.Redis.SentinelAddrs = sn.Addrs()
	cfg.Redis.MinReplicas = minReplicas
	return cfg
}

// waitPromotable polls every Sentinel until it lists a replica it could
// promote (up, linked, and seen recently): right after a failover the
// former primary is a replica the Sentinels do not trust yet, and SENTINEL
// FAILOVER answers NOGOODSLAVE.
func waitPromotable(t *testing.T, sn *redistest.Sentinel) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range sn.Addrs() {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		for {
			reps, err := sc.Replicas(context.Background(), sn.MasterName).Result()
			ok := false
			for _, r := range reps {
				lastOK, _ := strconv.Atoi(r["last-ok-ping-reply"])
				if !strings.Contains(r["flags"], "s_down") && !strings.Contains(r["flags"], "disconnected") &&
					r["master-link-status"] == "ok" && r["slave-priority"] != "0" && lastOK < 1000 &&
					r["info-refresh"] != "" {
					refresh, _ := strconv.Atoi(r["info-refresh"])
					ok = refresh < 2000
				}
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				_ = sc.Close()
				t.Fatalf("sentinel %s knows no promotable replica after 30s: %v %v", addr, reps, err)
			}
			time.Sleep(100 * time.Millisecond) // polling the Sentinel's view
		}
		_ = sc.Close()
	}
}

// quiet drops go-redis's own log lines (a refused dial during every
// Redis outage); the gateway's answers say everything the checkers need.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...interface{}) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	code := redistest.Run(m)
	gatewaytest.RemoveBinary()
	os.Exit(code)
}

// subprocess is a gateway run as its own process, so it can be killed
// with SIGKILL.
type subprocess struct {
	bin, addr, redisURL string
	cmd                 *exec.Cmd
	exited              chan struct{}
	// With the race detector on (raceBuild), the running gateway's
	// stderr, read once it has exited: a race report fails the test.
	t      *testing.T
	stderr *bytes.Buffer
}

func (g *subprocess) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(g.bin, "serve", "--addr", g.addr, "--redis-url", g.redisURL,
		"--request-timeout", requestTimeout.String(), "--abuse-log", "stderr", "--log-level", "error")
	g.t, g.stderr = t, nil
	if raceBuild {
		g.stderr = new(bytes.Buffer)
		cmd.Stderr = g.stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gateway: %v", err)
	}
	g.cmd, g.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(g.exited)
	c := &http.Client{Timeout: time.Second}
	redistest.Eventually(t, 20*time.Second, "the gateway answers /readyz", func() bool {
		resp, err := c.Get("http://" + g.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited before it was ready")
		default:
		}
		return false
	})
}

func (g *subprocess) kill() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
	g.cmd = nil
	// cmd.Wait has returned, so the copy into stderr is done.
	if g.stderr != nil && strings.Contains(g.stderr.String(), "WARNING: DATA RACE") {
		g.t.Errorf("the gateway reported a data race:\n%s", g.stderr)
	}
}

func setupGatewayKill(t *testing.T, _ settings) env {
	rs := redistest.Start(t, aof...)
	g := &subprocess{bin: gatewaytest.Binary(t), addr: redistest.FreeAddr(t), redisURL: rs.URL()}
	g.start(t)
	t.Cleanup(g.kill)
	return env{
		base: "http://" + g.addr,
		inject: func(t *testing.T, _ int, r *rand.Rand, w *workload) string {
			waiting := w.waiting.Load()
			down := jitter(r, 200*time.Millisecond, 800*time.Millisecond)
			g.kill()
			pause(context.Background(), down)
			g.start(t)
			return fmt.Sprintf("kill -9 with %d waiting acquires in flight, down %v, restart", waiting, down.Round(time.Millisecond))
		},
	}
}

// setupFleetKill runs three gateway processes on one Redis behind a
// round-robin proxy, so that every workload's waiters stand in the same
// lines through all three (docs/waiting.md, "One line per name"); each
// fault kills one of them with SIGKILL, waiters queued on it and all,
// and restarts it. The killed gateway's places in line are not left:
// they run out (redislock.TicketLease) while the others' waiters go on.
func setupFleetKill(t *testing.T, _ settings) env {
	rs := redistest.Start(t, aof...)
	bin := gatewaytest.Binary(t)
	fleet := make([]*subprocess, 3)
	urls := make([]*url.URL, len(fleet))
	for i := range fleet {
		g := &subprocess{bin: bin, addr: redistest.FreeAddr(t), redisURL: rs.URL()}
		g.start(t)
		t.Cleanup(g.kill)
		fleet[i], urls[i] = g, &url.URL{Scheme: "http", Host: g.addr}
	}
	var next atomic.Uint64
	lb := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(urls[next.Add(1)%uint64(len(urls))]) },
		// A request to the killed gateway ends as it does without the
		// balancer: the connection is cut, the outcome unknown.
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
	})
	t.Cleanup(lb.Close)
	return env{
		base: lb.URL,
		inject: func(t *testing.T, round int, r *rand.Rand, w *workload) string {
			g := fleet[round%len(fleet)]
			waiting := w.waiting.Load()
			down := jitter(r, 200*time.Millisecond, 800*time.Millisecond)
			g.kill()
			pause(context.Background(), down)
			g.start(t)
			return fmt.Sprintf("kill -9 of gateway %d of %d with %d waiting acquires in the fleet, down %v, restart",
				round%len(fleet)+1, len(fleet), waiting, down.Round(time.Millisecond))
		},
	}
}

// result is one scenario's figures.
type result struct {
	Scenario   string        `json:"scenario"`
	Promised   bool          `json:"safety_promised"`
	Duration   time.Duration `json:"duration_ns"`
	Clients    int           `json:"clients"`
	Faults     []string      `json:"faults"`
	Verdict    verdict       `json:"verdict"`
	Sets       setVerdict    `json:"lock_sets"`
	Semaphores semVerdict    `json:"semaphores"`
	Claims     claimVerdict  `json:"claims"`
	Notes      []string      `json:"notes,omitempty"`
	// Elections is the verdict of the election workload that ran beside
	// the locks' under the same faults (docs/elections.md).
	Elections verdict `json:"elections"`
	// Failovers: each master killed, in the failover scenarios.
	Failovers      []failoverWindow `json:"failovers,omitempty"`
	ElectionNotes  []string         `json:"election_notes,omitempty"`
	ElectionClient int              `json:"election_clients"`
}

// TestFaults runs every scenario of the run: the short run (go test
// ./...) has the Redis kill with AOF, the stall, the proxy, the gateway
// kill and the Cluster failover without --min-replicas; -faults.duration
// adds the restart without persistence and the other failovers. A long run (-faults.duration) runs its
// scenarios one after another: each one's figures (availability,
// latency, the stall's window) are measured on a machine no other
// scenario loads. The short run only checks, so its scenarios run at
// once, each with its own Redis, gateway and clients: its verdicts (the
// checkers' violations and that each workload was granted something) do
// not depend on load, and a checker that runs out of time reports the
// history as unknown, never as illegal.
func TestFaults(t *testing.T) {
	t.Parallel()
	redistest.Binary(t)
	var run []scenario
	want := map[string]bool{}
	for _, n := range strings.Split(*flagScenarios, ",") {
		if n != "" {
			want[n] = true
		}
	}
	for _, sc := range scenarios {
		if len(want) > 0 && !want[sc.name] {
			continue
		}
		if len(want) == 0 && *flagDuration <= 0 && !sc.short {
			continue
		}
		run = append(run, sc)
	}
	if len(run) == 0 {
		t.Fatalf("no scenario matches -faults.scenarios=%q", *flagScenarios)
	}
	s := runSettings(len(run))
	t.Logf("seed %d, %d clients, %d resources, %v per scenario, %d faults each", s.seed, s.clients, s.resources, s.perScenario, s.rounds)
	results := make([]result, len(run))
	// The summary runs once every scenario is done: parallel subtests
	// go on after this function returns, and a cleanup waits for them.
	t.Cleanup(func() { logResults(t, results) })
	for i, sc := range run {
		t.Run(sc.name, func(t *testing.T) {
			if !s.long {
				t.Parallel()
			}
			s := s
			s.seed += uint64(i)
			if !s.long && sc.failover {
				// Its six Redis nodes and the probes' gateway load the
				// machine beside the other scenarios: fewer clients.
				s.clients = max(4, s.clients/4)
			}
			results[i] = runScenario(t, sc, s)
		})
	}
}

// logResults logs every scenario's figures and writes -faults.report.
func logResults(t *testing.T, results []result) {
	// A scenario that stopped early has no result; its failure says why.
	results = slices.DeleteFunc(results, func(r result) bool { return r.Scenario == "" })
	for _, r := range results {
		for _, f := range r.Failovers {
			t.Logf("%-32s failover: %s", r.Scenario, f)
		}
		v := r.Verdict
		t.Logf("%-32s lock sets: ops=%d grants=%d refused=%d unknown=%d | overlaps=%d partial-holds=%d",
			r.Scenario, r.Sets.Ops, r.Sets.Grants, r.Sets.Refused, r.Sets.Unknown, r.Sets.Overlaps, r.Sets.PartialHolds)
		t.Logf("%-32s semaphores: ops=%d grants=%d refused=%d unknown=%d | over-limit=%d",
			r.Scenario, r.Semaphores.Ops, r.Semaphores.Grants, r.Semaphores.Refused, r.Semaphores.Unknown, r.Semaphores.OverLimit)
		c := r.Claims
		t.Logf("%-32s claims: ops=%d started=%d completed=%d answered-done=%d refused=%d unknown=%d | double-holders=%d ran-again=%d two-results=%d",
			r.Scenario, c.Ops, c.Started, c.Completed, c.Replayed, c.Refused, c.Unknown, c.DoubleHolders, c.RanAgain, c.TwoResults)
		t.Logf("%-32s promised=%-5v ops=%d grants=%d unknown=%d writes=%d faults=%d | model illegal=%d timed-out=%d lost-release=%d double-grants=%d | fencing stale=%d superseded-accepted=%d superseded-rejected=%d | token regressions=%d",
			r.Scenario, r.Promised, v.Ops, v.Grants, v.Unknown, v.Writes, len(r.Faults), v.ModelIllegal, v.ModelUnknown, v.ModelLostRelease, v.DoubleGrants, v.StaleAccepted, v.SupersededAccepted, v.SupersededRejected, v.TokenRegressions)
		e := r.Elections
		t.Logf("%-32s elections: ops=%d elected=%d unknown=%d writes=%d | model illegal=%d timed-out=%d lost-release=%d double-leaders=%d | fencing stale=%d superseded-accepted=%d superseded-rejected=%d | term regressions=%d",
			r.Scenario, e.Ops, e.Grants, e.Unknown, e.Writes, e.ModelIllegal, e.ModelUnknown, e.ModelLostRelease, e.DoubleGrants, e.StaleAccepted, e.SupersededAccepted, e.SupersededRejected, e.TokenRegressions)
	}
	if *flagReport != "" {
		b, err := json.MarshalIndent(results, "", "  ")
		if err == nil {
			err = os.WriteFile(*flagReport, append(b, '\n'), 0o644)
		}
		if err != nil {
			t.Errorf("write report: %v", err)
		}
	}
}

// judgeSide fails a scenario on a side workload's (what's) answers
// outside the contract, on a workload that did not run (nothing granted,
// or for claims nothing started and completed), and, where the docs
// promise safety, on any violation its checkers found (the verdict says
// which).
func judgeSide(t *testing.T, sc scenario, what string, verdict any, odd []string, ran bool, violations int) {
	t.Helper()
	t.Logf("%s: %s workload %+v", sc.name, what, verdict)
	if len(odd) > 0 {
		t.Errorf("%s answers outside the contract: %q", what, odd)
	}
	if !ran {
		t.Errorf("the %s workload did not run: %+v", what, verdict)
	}
	if sc.promised && violations > 0 {
		t.Errorf("%s: the docs promise safety here, and the %s checkers found %d violations: %+v", sc.name, what, violations, verdict)
	}
}

// saveIllegal writes the history of every resource the model refused, or
// another checker found a violation on, next to the -faults.report file,
// as JSON, one file per resource.
func saveIllegal(t *testing.T, scenario string, illegal map[string][]op) {
	t.Helper()
	if *flagReport == "" {
		return
	}
	for res, ops := range illegal {
		name := filepath.Join(filepath.Dir(*flagReport), "illegal-"+strings.ReplaceAll(res, "/", "-")+".json")
		b, err := json.MarshalIndent(ops, "", " ")
		if err == nil {
			err = os.WriteFile(name, b, 0o644)
		}
		if err != nil {
			t.Errorf("save the history of %s: %v", res, err)
			continue
		}
		t.Logf("%s: history of %s saved in %s", scenario, res, name)
	}
}

func runScenario(t *testing.T, sc scenario, s settings) result {
	e := sc.setup(t, s)
	w := newWorkload(e.base, sc.name, s.resources, s.clients)
	ew := newElectionWorkload(e.base, sc.name, s.resources, max(2, s.clients/4))
	r := rand.New(rand.NewPCG(s.seed, 1<<32))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	end := began.Add(s.perScenario)
	waitLocks := w.run(ctx, s.seed)
	waitElections := ew.run(ctx, s.seed+1<<40)
	sw := newSetWorkload(e.base, sc.name, 5, 2)
	waitSets := sw.run(ctx, s.seed)
	mw := newSemWorkload(e.base, sc.name, 2, 4)
	waitSems := mw.run(ctx, s.seed)
	cw := newClaimWorkload(e.base, sc.name, 4)
	waitClaims := cw.run(ctx, s.seed)
	wait := func() { waitLocks(); waitElections(); waitSets(); waitSems(); waitClaims() }
	var faults []string
	for i := 0; i < s.rounds; i++ {
		// Spread the faults over the scenario, leaving a quiet tail.
		gap := time.Until(end) / time.Duration(s.rounds-i+1)
		pause(ctx, jitter(r, gap/2, gap))
		// The fault's span in Unix ms, the Redis clock's unit (one host),
		// to read a kept history against.
		at := time.Now().UnixMilli()
		f := e.inject(t, i, r, w)
		f = fmt.Sprintf("%s (Unix ms %d to %d)", f, at, time.Now().UnixMilli())
		faults = append(faults, f)
		t.Logf("fault %d: %s", i+1, f)
	}
	pause(ctx, time.Until(end))
	cancel()
	wait()
	elapsed := time.Since(began)
	v, notes, illegal := check(w.h, s.checkTimeout, sc.failover)
	saveIllegal(t, sc.name, illegal)
	ev, enotes, eillegal := check(ew.h, s.checkTimeout, sc.failover)
	saveIllegal(t, sc.name+"-elections", eillegal)
	setOps, setOdd := sw.snapshot()
	sv, setNotes := checkSets(setOps)
	notes = append(notes, setNotes...)
	semOps, semOdd := mw.snapshot()
	mv, semNotes := checkSems(semOps)
	notes = append(notes, semNotes...)
	claimOps, claimOdd := cw.snapshot()
	cv, claimNotes := checkClaims(claimOps)
	notes = append(notes, claimNotes...)
	var failovers []failoverWindow
	if e.failovers != nil {
		failovers = e.failovers()
		judgeFailovers(t, sc, failovers)
	}
	res := result{Failovers: failovers, Claims: cv, Scenario: sc.name, Promised: sc.promised, Duration: elapsed, Clients: s.clients, Faults: faults, Verdict: v, Sets: sv, Notes: notes,
		Elections: ev, ElectionNotes: enotes, ElectionClient: ew.clients, Semaphores: mv}
	t.Logf("%s: %+v", sc.name, v)
	t.Logf("%s elections: %+v", sc.name, ev)
	judgeSide(t, sc, "lock-set", sv, setOdd, sv.Grants > 0, sv.violations())
	judgeSide(t, sc, "semaphore", mv, semOdd, mv.Grants > 0, mv.violations())
	judgeSide(t, sc, "claim", cv, claimOdd, cv.Started > 0 && cv.Completed > 0, cv.violations())
	for _, n := range append(notes, enotes...) {
		t.Log(n)
	}
	for _, h := range []*history{w.h, ew.h} {
		h.mu.Lock()
		unexpected := h.unexpected
		h.mu.Unlock()
		if len(unexpected) > 0 {
			t.Errorf("answers outside the contract: %q", unexpected)
		}
	}
	if v.Grants == 0 {
		t.Errorf("no acquire was granted: the workload did not run")
	}
	if ev.Grants == 0 {
		t.Errorf("no campaign was elected: the election workload did not run")
	}
	if sc.promised && ev.violations() > 0 {
		t.Errorf("%s: the docs promise safety for elections here, and the checkers found %d violations (model illegal %d, double leaders %d, stale writes %d, superseded writes %d, term regressions %d)",
			sc.name, ev.violations(), ev.ModelIllegal, ev.DoubleGrants, ev.StaleAccepted, ev.SupersededAccepted, ev.TokenRegressions)
	}
	if sc.promised && v.violations() > 0 {
		t.Errorf("%s: the docs promise safety here, and the checkers found %d violations (model illegal %d, double grants %d, stale writes %d, superseded writes %d, token regressions %d)",
			sc.name, v.violations(), v.ModelIllegal, v.DoubleGrants, v.StaleAccepted, v.SupersededAccepted, v.TokenRegressions)
	}
	return res
}
