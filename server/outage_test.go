package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/server"
)

// TestAKilledRedisIsAnsweredAtOnce: Redis killed (kill -9) under a
// gateway with its default timeouts. Waiting acquires already queued get
// their 503 at once, not at the end of wait_ms or --request-timeout; every
// call after them is answered 503 at once; /readyz agrees; one log line
// says Redis went down and one that it came back; leasegate_redis_up
// follows; and once Redis is back, calls succeed again.
func TestAKilledRedisIsAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	log, lb := capture(t)
	s, err := startOn(t, srv.URL(), log, nil) // --request-timeout 5s, --outage-grace 1s
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	h := s.Handler()
	node := `leasegate_redis_up{node="` + srv.Addr() + `"}`
	if got := metric(t, s, node); got != 1 {
		t.Fatalf("%s before the outage: got %v, want 1", node, got)
	}
	if code := apptest.Do(t, h, http.MethodPost, "/locks/r", `{"owner":"a","ttl_seconds":60}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/r: got %d, want 200", code)
	}

	// Five waiting acquires queue behind a's lease.
	const waiters = 5
	type answer struct {
		code int
		took time.Duration
	}
	answers := make(chan answer, waiters)
	var killed time.Time
	var mu sync.Mutex
	for i := 0; i < waiters; i++ {
		go func() {
			code := apptest.Do(t, h, http.MethodPost, "/locks/r", `{"owner":"w","ttl_seconds":60,"wait_ms":20000}`).StatusCode
			mu.Lock()
			defer mu.Unlock()
			answers <- answer{code, time.Since(killed)}
		}()
	}
	redistest.Eventually(t, 5*time.Second, "the waiters to queue", func() bool {
		return metric(t, s, "leasegate_lock_waiters") == waiters
	})

	mu.Lock()
	killed = time.Now()
	srv.Kill()
	mu.Unlock()
	// Generous for a loaded machine; the waiters used to be answered at
	// --request-timeout (5 s) after the kill, one after the other.
	const atOnce = 2 * time.Second
	for i := 0; i < waiters; i++ {
		a := <-answers
		if a.code != http.StatusServiceUnavailable || a.took > atOnce {
			t.Errorf("queued waiter %d: got %d after %v, want 503 within %v of the kill", i, a.code, a.took, atOnce)
		}
	}

	// Known down: twenty calls one after the other, each at once (they
	// used to take 5 s each), and none of them logged.
	failedBefore := len(records(t, lb, "error", "request failed"))
	start := time.Now()
	for i := 0; i < 20; i++ {
		ans := apptest.Do(t, h, http.MethodGet, "/locks/r", "")
		ans.Problem(t, http.StatusServiceUnavailable, "unavailable")
		if ans.Header.Get("Retry-After") == "" {
			t.Errorf("call %d: 503 without Retry-After", i)
		}
	}
	if took := time.Since(start); took > atOnce {
		t.Errorf("20 calls with Redis known down took %v, want within %v together", took, atOnce)
	}
	if got := len(records(t, lb, "error", "request failed")); got != failedBefore {
		t.Errorf("20 refused calls wrote %d 'request failed' lines, want none: the outage is logged once", got-failedBefore)
	}
	if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz with Redis down: got %d, want 503", code)
	}
	if got := metric(t, s, node); got != 0 {
		t.Errorf("%s with Redis down: got %v, want 0", node, got)
	}

	srv.Restart()
	back := time.Now()
	redistest.Eventually(t, 5*time.Second, "a grant once Redis is back", func() bool {
		return apptest.Do(t, h, http.MethodPost, "/locks/after", `{"owner":"a","ttl_seconds":60}`).StatusCode == http.StatusOK
	})
	t.Logf("first grant %v after Redis was back", time.Since(back))
	if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
		t.Errorf("GET /readyz with Redis back: got %d, want 200", code)
	}
	if got := metric(t, s, node); got != 1 {
		t.Errorf("%s with Redis back: got %v, want 1", node, got)
	}
	for _, to := range []string{"down", "up"} {
		series := `leasegate_redis_state_changes_total{node="` + srv.Addr() + `",to="` + to + `"}`
		if got := metric(t, s, series); got != 1 {
			t.Errorf("%s: got %v, want 1", series, got)
		}
	}

	// One line when it went down and one when it came back, however
	// many calls were refused in between.
	down, up := records(t, lb, "warn", "redis is down"), records(t, lb, "info", "redis is back")
	if len(down) != 1 || down[0]["node"] != srv.Addr() {
		t.Errorf("got %d 'redis is down' lines, want 1 naming %s: %v", len(down), srv.Addr(), down)
	}
	if len(up) != 1 || up[0]["down_for"] == nil {
		t.Errorf("got %d 'redis is back' lines, want 1 with down_for: %v", len(up), up)
	}
}

// TestTheOutageGraceBoundsTheFirstCall: a node that stops answering
// (SIGSTOP) holds the call that meets it at most --outage-grace, and with
// --outage-grace 0 at most the least reply window; then it is known down
// and calls are answered at once.
func TestTheOutageGraceBoundsTheFirstCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		grace time.Duration
	}{
		{"grace 400ms", 400 * time.Millisecond},
		{"grace 0", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t)
			s, err := startOn(t, srv.URL(), nil, func(c *server.Config) { c.Redis.OutageGrace = tc.grace })
			if err != nil {
				t.Fatalf("server.New: %v", err)
			}
			h := s.Handler()
			if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
				t.Fatalf("GET /readyz: got %d, want 200", code)
			}
			srv.Pause()
			t.Cleanup(srv.Resume)
			window := max(tc.grace, redisconn.MinReplyWindow)
			const slack = 750 * time.Millisecond
			start := time.Now()
			apptest.Do(t, h, http.MethodGet, "/locks/r", "").Problem(t, http.StatusServiceUnavailable, "unavailable")
			if took := time.Since(start); took < window || took > window+slack {
				t.Errorf("first call answered after %v, want from %v to %v", took, window, window+slack)
			}
			start = time.Now()
			apptest.Do(t, h, http.MethodGet, "/locks/r", "").Problem(t, http.StatusServiceUnavailable, "unavailable")
			if took := time.Since(start); took >= window {
				t.Errorf("second call answered after %v, want at once (under %v)", took, window)
			}
		})
	}
}

// TestADeadClusterMasterAnswersOnlyForItsSlots: Redis Cluster of three
// masters without replicas (cluster-require-full-coverage no), one killed:
// calls on its slots are answered 503, at once once it is known down;
// calls on the other masters' slots go on being answered; /readyz stays
// 200 while a master serves; leasegate_redis_up says which is down.
func TestADeadClusterMasterAnswersOnlyForItsSlots(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	for _, n := range cl.Nodes {
		configSet(t, n.Client(t), "cluster-require-full-coverage", "no")
	}
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.ClusterAddrs = cl.Addrs()
	s := newServer(t, cfg)
	h := s.Handler()
	cc := cl.Client(t)

	// Thirty resources, and the master each lock key lives on.
	onMaster := map[string]string{}
	for i := 0; i < 30; i++ {
		res := fmt.Sprintf("r-%d", i)
		onMaster[res] = lockOn(t, h, cc, cfg.KeyPrefix, res)
	}
	dead := cl.Nodes[0]
	var deadOnes int
	for _, addr := range onMaster {
		if addr == dead.Addr() {
			deadOnes++
		}
	}
	if deadOnes == 0 || deadOnes == len(onMaster) {
		t.Fatalf("%d of %d resources on %s: want some on it and some elsewhere", deadOnes, len(onMaster), dead.Addr())
	}

	dead.Kill()
	// Until the dead master is known down, a call on its slots may take
	// up to --outage-grace; after, each is at once.
	for _, round := range []string{"first", "second"} {
		start := time.Now()
		for res, addr := range onMaster {
			code := apptest.Do(t, h, http.MethodGet, "/locks/"+res, "").StatusCode
			want := http.StatusOK
			if addr == dead.Addr() {
				want = http.StatusServiceUnavailable
			}
			if code != want {
				t.Errorf("%s round: GET /locks/%s (on %s): got %d, want %d", round, res, addr, code, want)
			}
		}
		t.Logf("%s round: %d calls in %v", round, len(onMaster), time.Since(start))
		if round == "second" && time.Since(start) > 2*time.Second {
			t.Errorf("second round of %d calls took %v, want well under 1 s each", len(onMaster), time.Since(start))
		}
	}
	if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
		t.Errorf("GET /readyz with two of three masters up: got %d, want 200", code)
	}
	if got := metric(t, s, `leasegate_redis_up{node="`+dead.Addr()+`"}`); got != 0 {
		t.Errorf("leasegate_redis_up of the dead master: got %v, want 0", got)
	}
	for _, n := range cl.Nodes[1:] {
		if got := metric(t, s, `leasegate_redis_up{node="`+n.Addr()+`"}`); got != 1 {
			t.Errorf("leasegate_redis_up of %s: got %v, want 1", n.Addr(), got)
		}
	}
}

// TestASentinelFailoverIsAnsweredAtOnceUntilTheNewPrimaryAnswers: the
// primary killed under a Sentinel-following gateway. Until Sentinel has
// promoted the replica, calls are answered 503, at once once the master
// is known down, and /readyz says 503; then the new primary serves, with
// no restart of the gateway.
func TestASentinelFailoverIsAnsweredAtOnceUntilTheNewPrimaryAnswers(t *testing.T) {
	t.Parallel()
	sn := redistest.StartSentinel(t)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.Redis.SentinelMaster = sn.MasterName
	cfg.Redis.SentinelAddrs = sn.Addrs()
	s := newServer(t, cfg)
	h := s.Handler()
	if code := apptest.Do(t, h, http.MethodPost, "/locks/before", `{"owner":"a","ttl_seconds":60}`).StatusCode; code != http.StatusOK {
		t.Fatalf("POST /locks/before: got %d, want 200", code)
	}
	sn.Primary.Kill()

	// The first call meets the dead primary (a reset or refused
	// connection); every call after it is answered at once.
	apptest.Do(t, h, http.MethodGet, "/locks/before", "").Problem(t, http.StatusServiceUnavailable, "unavailable")
	start := time.Now()
	for i := 0; i < 20; i++ {
		apptest.Do(t, h, http.MethodGet, "/locks/before", "").Problem(t, http.StatusServiceUnavailable, "unavailable")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("20 calls with the primary known down took %v, want at once", took)
	}
	if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusServiceUnavailable {
		t.Errorf("GET /readyz with the primary down: got %d, want 503", code)
	}

	// Sentinel promotes the replica after down-after-milliseconds (2 s).
	redistest.Eventually(t, 30*time.Second, "a grant from the new primary", func() bool {
		return apptest.Do(t, h, http.MethodPost, "/locks/after", `{"owner":"a","ttl_seconds":60}`).StatusCode == http.StatusOK
	})
	// The old primary is dead: the grant is the promoted replica's. (Which
	// master the first Sentinel names may lag the one the gateway asked.)
	lock, _, _ := keyspace.Space{Prefix: cfg.KeyPrefix}.LockKeys("", "after")
	if n, err := sn.Replica.Client(t).Exists(context.Background(), lock).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS %s on the promoted replica: got %d, %v; want 1", lock, n, err)
	}
	if code := apptest.Do(t, h, http.MethodGet, "/readyz", "").StatusCode; code != http.StatusOK {
		t.Errorf("GET /readyz after the failover: got %d, want 200", code)
	}
	if got := metric(t, s, `leasegate_redis_up{node="master"}`); got != 1 {
		t.Errorf(`leasegate_redis_up{node="master"} after the failover: got %v, want 1`, got)
	}
}
