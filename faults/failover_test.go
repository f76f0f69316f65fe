package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
)

// The failover scenarios kill a master with kill -9 and let Redis itself
// promote its replica (Redis Cluster, or Sentinel), as a crash would,
// where sentinel-failover-* switch gracefully (SENTINEL FAILOVER). Each
// fault measures, beside the workload, how long the killed master's keys
// go without a 2xx, against Redis's own promotion time read from ROLE on
// the replica (failoverWindow), and counts the non-2xx answers on a key of
// a master that was not killed. The probes go through a gateway of their
// own on the same Redis, which serves nothing else: the workload's
// waiting acquires make the workload's gateway reload the Cluster slot
// map whenever a shard subscription fails (redislock/shards.go), and a
// gateway without waiters, the default, must not depend on that.

// clusterNodeTimeout is the failover cluster's cluster-node-timeout.
const clusterNodeTimeout = time.Second

// served bounds the wait for the first 2xx on the killed master's keys,
// from the kill (from the killed master's return as a replica with
// --min-replicas). Without the slot-map reload a Cluster's promoted
// master served only once go-redis reloaded its map, a minute after its
// last load; the short run fails on that.
const served = 30 * time.Second

// failoverWindow is one kill's figures, in ms from the kill.
type failoverWindow struct {
	Killed    string `json:"killed"`
	Promoted  string `json:"promoted"`
	Promotion int64  `json:"promotion_ms"`
	// Switch (Sentinel): when the first Sentinel named the promoted
	// replica master (GET-MASTER-ADDR-BY-NAME), which is what the gateway
	// follows; it comes after ROLE says master.
	Switch int64 `json:"sentinel_switch_ms,omitempty"`
	// FirstOK: the first 2xx on the killed master's keys, or -1 when none
	// came within served.
	FirstOK int64 `json:"first_2xx_ms"`
	// AfterPromotion is FirstOK - Promotion.
	AfterPromotion int64 `json:"first_2xx_after_promotion_ms"`
	// Relinked: with --min-replicas, when the killed master, restarted,
	// was a linked replica of the promoted one (the first 2xx waits for
	// it).
	Relinked int64 `json:"relinked_ms,omitempty"`
	// OtherNon2xx counts the answers other than 2xx on a key of a master
	// that was not killed, from the kill to the first 2xx (Cluster).
	OtherNon2xx int `json:"other_master_non_2xx"`
	OtherCalls  int `json:"other_master_calls"`
}

func (f failoverWindow) String() string {
	s := fmt.Sprintf("kill -9 %s: %s ROLE master after %d ms", f.Killed, f.Promoted, f.Promotion)
	if f.Switch > 0 {
		s += fmt.Sprintf(", named by Sentinel after %d ms", f.Switch)
	}
	if f.Relinked > 0 {
		s += fmt.Sprintf(", the killed one a linked replica after %d ms", f.Relinked)
	}
	s += fmt.Sprintf(", first 2xx on its keys after %d ms (%+d ms after the promotion)", f.FirstOK, f.AfterPromotion)
	if f.OtherCalls > 0 {
		s += fmt.Sprintf(", other master: %d of %d calls not 2xx", f.OtherNon2xx, f.OtherCalls)
	}
	return s
}

// prober acquires one resource as one owner (an idempotent re-acquire)
// every 10 ms, and keeps when the first 2xx came and how many calls were
// not 2xx.
type prober struct {
	stop func()
	done chan struct{}

	mu      sync.Mutex
	firstOK time.Time
	calls   int
	non2xx  int
	ok      chan struct{} // closed at the first 2xx
}

func startProber(base, res string) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{stop: cancel, done: make(chan struct{}), ok: make(chan struct{})}
	c := &http.Client{Timeout: clientTimeout}
	url := base + "/locks/" + url.PathEscape(res)
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"owner":"prober","ttl_seconds":5}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			status := 0
			if err == nil {
				status = resp.StatusCode
				_ = resp.Body.Close()
			}
			if ctx.Err() != nil {
				return
			}
			p.mu.Lock()
			p.calls++
			if status < 200 || status > 299 {
				p.non2xx++
			} else if p.firstOK.IsZero() {
				p.firstOK = time.Now()
				close(p.ok)
			}
			p.mu.Unlock()
			pause(ctx, 10*time.Millisecond)
		}
	}()
	return p
}

// finish stops the prober and returns its figures.
func (p *prober) finish() (firstOK time.Time, calls, non2xx int) {
	p.stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstOK, p.calls, p.non2xx
}

// pair is a master and its replica, either way round.
type pair struct {
	a, b *redistest.Server
	res  string // a resource whose lock key lives on the pair
}

// roles returns the pair's master and replica, by ROLE.
func (p pair) roles(t *testing.T) (master, replica *redistest.Server) {
	t.Helper()
	role, err := p.a.Client(t).Do(context.Background(), "ROLE").Slice()
	if err != nil || len(role) == 0 {
		t.Fatalf("%s: ROLE: %v %v", p.a, role, err)
	}
	if role[0] == "master" {
		return p.a, p.b
	}
	return p.b, p.a
}

// killMaster kills victim (the master of the keys probed on base) with
// kill -9, waits for promote to say how long promotion took and return
// the new master, and restarts the victim: at once with minReplicas (the
// first 2xx waits for a replica), after the first 2xx without. relink
// waits until the restarted victim is a linked replica again.
func killMaster(t *testing.T, base string, victim, other pair, minReplicas int,
	promote func(replica *redistest.Server) (promoted, switched time.Time),
	relink func(old *redistest.Server)) failoverWindow {
	t.Helper()
	master, replica := victim.roles(t)
	f := failoverWindow{Killed: master.Addr(), Promoted: replica.Addr()}
	pv := startProber(base, victim.res)
	var po *prober
	if other.res != "" {
		po = startProber(base, other.res)
	}
	killed := time.Now()
	master.Kill()
	ms := func(at time.Time) int64 { return at.Sub(killed).Milliseconds() }
	promoted, switched := promote(replica)
	f.Promotion = ms(promoted)
	if !switched.IsZero() {
		f.Switch = ms(switched)
	}
	restart := func() {
		master.Restart()
		relink(master)
	}
	if minReplicas > 0 {
		restart()
		f.Relinked = ms(time.Now())
	}
	select {
	case <-pv.ok:
	case <-time.After(served):
		t.Errorf("kill -9 %s: no 2xx on its keys within %v of %s", master, served,
			map[bool]string{true: "its restart as a replica", false: "the kill"}[minReplicas > 0])
	}
	firstOK, _, _ := pv.finish()
	if po != nil {
		_, f.OtherCalls, f.OtherNon2xx = po.finish()
	}
	f.FirstOK, f.AfterPromotion = -1, -1
	if !firstOK.IsZero() {
		f.FirstOK = ms(firstOK)
		f.AfterPromotion = f.FirstOK - f.Promotion
	}
	if minReplicas == 0 {
		restart()
	}
	return f
}

// setupClusterFailover runs the gateway on a Redis Cluster of three
// masters with a replica each; each fault kills one master in turn.
func setupClusterFailover(minReplicas int) func(*testing.T, settings) env {
	return func(t *testing.T, _ settings) env {
		cl := redistest.StartFailoverCluster(t, clusterNodeTimeout)
		cfg := gatewayConfig("")
		cfg.Redis.ClusterAddrs = cl.Addrs()
		cfg.Redis.MinReplicas = minReplicas
		base, probe := inProcess(t, cfg), inProcess(t, cfg)
		pairs := clusterPairs(t, cl, cfg.KeyPrefix)
		var figures []failoverWindow
		return env{
			base: base,
			inject: func(t *testing.T, round int, _ *rand.Rand, _ *workload) string {
				victim, other := pairs[round%3], pairs[(round+1)%3]
				f := killMaster(t, probe, victim, other, minReplicas,
					func(replica *redistest.Server) (time.Time, time.Time) {
						return cl.WaitPromoted(t, replica, 30*time.Second), time.Time{}
					},
					func(old *redistest.Server) { old.WaitReplicaLinked(t, 30*time.Second) })
				figures = append(figures, f)
				return f.String()
			},
			failovers: func() []failoverWindow { return figures },
		}
	}
}

// clusterPairs are the cluster's master/replica pairs, each with a
// resource of the probers on its slots.
func clusterPairs(t *testing.T, cl *redistest.Cluster, prefix string) []pair {
	t.Helper()
	cc := cl.Client(t)
	keys := keyspace.Space{Prefix: prefix}
	pairs := make([]pair, len(cl.Nodes))
	for i := range pairs {
		pairs[i] = pair{a: cl.Nodes[i], b: cl.Replicas[i]}
	}
	for n, found := 0, 0; found < len(pairs); n++ {
		res := fmt.Sprintf("failover-probe/r%d", n)
		lock, _, _ := keys.LockKeys("", res)
		m, err := cc.MasterForKey(context.Background(), lock)
		if err != nil {
			t.Fatalf("MasterForKey(%s): %v", lock, err)
		}
		for i := range pairs {
			if pairs[i].res == "" && m.Options().Addr == pairs[i].a.Addr() {
				pairs[i].res = res
				found++
			}
		}
	}
	return pairs
}

// setupSentinelKill is setupSentinel with the primary killed by kill -9:
// Sentinel promotes the replica after down-after-milliseconds (2 s) and
// its election.
func setupSentinelKill(minReplicas int) func(*testing.T, settings) env {
	return func(t *testing.T, _ settings) env {
		sn, base := sentinelGateway(t, minReplicas)
		probe := inProcess(t, sentinelConfig(sn, minReplicas))
		// One master holds every key: there is no other master.
		p := pair{a: sn.Primary, b: sn.Replica, res: "failover-probe/r0"}
		sc := redis.NewSentinelClient(&redis.Options{Addr: sn.Addrs()[0]})
		t.Cleanup(func() { _ = sc.Close() })
		var figures []failoverWindow
		return env{
			base: base,
			inject: func(t *testing.T, _ int, _ *rand.Rand, _ *workload) string {
				waitPromotable(t, sn)
				f := killMaster(t, probe, p, pair{}, minReplicas,
					func(replica *redistest.Server) (time.Time, time.Time) {
						return replica.WaitMaster(t, 30*time.Second), sentinelNames(t, sc, sn.MasterName, replica.Addr())
					},
					// Sentinel makes the restarted primary a replica some
					// seconds after it answers again.
					func(old *redistest.Server) { old.WaitReplicaLinked(t, 60*time.Second) })
				figures = append(figures, f)
				return f.String()
			},
			failovers: func() []failoverWindow { return figures },
		}
	}
}

// judgeFailovers fails a failover scenario without --min-replicas whose
// other masters' keys were refused while one master was down (Cluster).
// How soon the killed master's keys served again is a figure, checked
// only against the hang guard (served).
func judgeFailovers(t *testing.T, sc scenario, figures []failoverWindow) {
	t.Helper()
	for _, f := range figures {
		if !strings.HasSuffix(sc.name, "-no-wait") || f.OtherNon2xx == 0 {
			continue
		}
		t.Errorf("%s: %d of %d calls on another master's key were not 2xx while %s was down", sc.name, f.OtherNon2xx, f.OtherCalls, f.Killed)
	}
}

// sentinelNames polls sc until it names addr as name's
// master, and returns when it first did.
func sentinelNames(t *testing.T, sc *redis.SentinelClient, name, addr string) time.Time {
	t.Helper()
	var at time.Time
	redistest.Eventually(t, 30*time.Second, "the Sentinel names "+addr, func() bool {
		hp, err := sc.GetMasterAddrByName(context.Background(), name).Result()
		at = time.Now()
		return err == nil && len(hp) == 2 && net.JoinHostPort(hp[0], hp[1]) == addr
	})
	return at
}
