package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/launch"
)

// The capacity measurement (-capacity): what one cycle of each kind costs
// every process that serves it, on a fleet of gateway processes
// (`leasegate serve`, Config.GatewayCommand) in front of one redis-server
// or a Redis Cluster, all started by the run on loopback. A phase's
// figures are per cycle: CPU time of each process (the gateways from
// /proc/PID/stat, each Redis node from INFO cpu, the load generator, this
// process, from getrusage), bytes on the wire (HTTP counted at the load
// generator's sockets, Redis from INFO stats), Redis commands and MOVED
// redirects. A topology also measures Redis memory per held lock and per
// waiter. CPU time per cycle is the figure that a shared machine does not
// move much; cycles/s is reported with the cores the rest of the machine
// took meanwhile (/proc/stat), which capacity.md's model uses.

// Topology is a fleet shape: Gateways gateway processes on one
// redis-server, or on a Redis Cluster of Masters masters. Unbatched
// gateways send each script call on its own (--no-auto-pipeline).
type Topology struct {
	Name      string `json:"name"`
	Gateways  int    `json:"gateways"`
	Masters   int    `json:"masters"`
	Cluster   bool   `json:"cluster"`
	Unbatched bool   `json:"unbatched,omitempty"`
}

// Topologies are the shapes -capacity measures, by name: g1..g3 gateways
// on one redis-server, u1 one gateway there without auto-pipelining (a
// pipeline of one call: what a gateway of a large fleet, with few calls
// in flight per master, comes close to), c1..c3 masters of a Redis
// Cluster behind one gateway.
var Topologies = []Topology{
	{Name: "g1", Gateways: 1, Masters: 1},
	{Name: "u1", Gateways: 1, Masters: 1, Unbatched: true},
	{Name: "g2", Gateways: 2, Masters: 1},
	{Name: "g3", Gateways: 3, Masters: 1},
	{Name: "c1", Gateways: 1, Masters: 1, Cluster: true},
	{Name: "c2", Gateways: 1, Masters: 2, Cluster: true},
	{Name: "c3", Gateways: 1, Masters: 3, Cluster: true},
}

// memoryCounts are the held locks, waiters and event streams of the
// memory measurement of each topology: 32, 32 and 16 per client of -c
// (2,048, 2,048 and 1,024 at the default 64), at most 10,000 each. A
// gateway's RSS grows by less than its new memory while the count is
// small (it had some free already), so the counts are not tiny.
func memoryCounts(clients int) (held, waiters, streams int) {
	return min(32*clients, 10000), min(32*clients, 10000), min(16*clients, 10000)
}

// CapacityReport is what -capacity measured.
type CapacityReport struct {
	GoVersion    string  `json:"go_version"`
	RedisVersion string  `json:"redis_version"`
	NumCPU       int     `json:"num_cpu"`
	Concurrency  int     `json:"concurrency"`
	Seconds      float64 `json:"seconds_per_phase"`
	Rounds       int     `json:"rounds"`
	// LoadAvg is /proc/loadavg's 1-minute figure at the start and the end.
	LoadAvg    [2]float64     `json:"load_average"`
	Topologies []CapacityTopo `json:"topologies"`
}

// CapacityTopo is one topology's phases (medians over the rounds) and
// memory.
type CapacityTopo struct {
	Topology
	Phases []CostPhase `json:"phases"`
	Memory MemoryCost  `json:"memory"`
}

// CostPhase is what one kind of cycle cost. Per-cycle figures are the
// medians over the rounds; CPU in microseconds, bytes in bytes.
type CostPhase struct {
	Name         string    `json:"name"`
	Cycles       int64     `json:"cycles"`
	Errors       int64     `json:"errors"`
	FirstError   string    `json:"first_error,omitempty"`
	CyclesPerSec float64   `json:"cycles_per_sec"`
	RoundsPerSec []float64 `json:"rounds_cycles_per_sec"`
	P50ms        float64   `json:"p50_ms"`
	P99ms        float64   `json:"p99_ms"`

	GatewayCPUus float64 `json:"gateway_cpu_us"` // all gateways
	RedisCPUus   float64 `json:"redis_cpu_us"`   // all nodes
	// RedisMaxCPUus is the busiest node's: the one a master's core limits.
	RedisMaxCPUus float64 `json:"redis_max_node_cpu_us"`
	DriverCPUus   float64 `json:"driver_cpu_us"` // the load generator
	// OtherCores is the cores the rest of the machine used meanwhile.
	OtherCores float64 `json:"other_cores"`

	HTTPBytes  float64 `json:"http_bytes"`  // client<->gateway, both ways
	RedisBytes float64 `json:"redis_bytes"` // gateway<->Redis, both ways
	// RedisReads is the socket reads Redis made (INFO stats
	// total_reads_processed): a pipeline of n calls is one read, so the
	// script calls per read are the pipelines' depth.
	RedisReads float64 `json:"redis_reads"`
	// RedisCalls is commands per cycle over all nodes (those of scripts
	// included); Moved the MOVED redirects.
	RedisCalls map[string]float64 `json:"redis_calls"`
	Moved      float64            `json:"moved"`
}

// MemoryCost is Redis memory (INFO used_memory, all nodes) per held lock
// and per waiter, and the gateways' RSS per waiter.
type MemoryCost struct {
	Held                int     `json:"held_locks"`
	RedisPerLock        float64 `json:"redis_bytes_per_lock"`
	Waiters             int     `json:"waiters"`
	RedisPerWaiter      float64 `json:"redis_bytes_per_waiter"`
	GatewayRSSPerWaiter float64 `json:"gateway_rss_bytes_per_waiter"`
	// Streams open event streams (GET /locks/{r}/events, spread over
	// the gateways), each read up to its first event.
	Streams             int     `json:"streams"`
	RedisPerStream      float64 `json:"redis_bytes_per_stream"`
	GatewayRSSPerStream float64 `json:"gateway_rss_bytes_per_stream"`
}

// fleet is a topology's running processes.
type fleet struct {
	nodes    []*launch.Redis
	dirs     []string        // each node's directory
	stats    []*redis.Client // one per node
	gateways []*launch.Gateway
	bases    []string // http://host:port of each gateway
	hc       *http.Client
	httpIO   atomic.Int64 // bytes through the load generator's sockets
}

// runCapacity measures every topology of cfg.CapacityTopologies (all
// when empty).
func runCapacity(ctx context.Context, cfg Config, runID string) (*CapacityReport, error) {
	_, waiters, streams := memoryCounts(cfg.Concurrency)
	if _, err := raiseNoFile(uint64(cfg.Concurrency + waiters + streams + 256)); err != nil {
		return nil, err
	}
	rep := &CapacityReport{
		GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(), Concurrency: cfg.Concurrency,
		Seconds: cfg.Duration.Seconds(), Rounds: cfg.Rounds,
	}
	rep.LoadAvg[0] = loadAvg()
	for _, t := range Topologies {
		if len(cfg.CapacityTopologies) > 0 && !slices.Contains(cfg.CapacityTopologies, t.Name) {
			continue
		}
		ct, version, err := measureTopology(ctx, cfg, t, runID)
		if err != nil {
			return nil, fmt.Errorf("bench: capacity %s: %w", t.Name, err)
		}
		rep.RedisVersion = version
		rep.Topologies = append(rep.Topologies, *ct)
	}
	rep.LoadAvg[1] = loadAvg()
	return rep, nil
}

func measureTopology(ctx context.Context, cfg Config, t Topology, runID string) (*CapacityTopo, string, error) {
	f, err := startFleet(ctx, cfg, t)
	if err != nil {
		return nil, "", err
	}
	defer f.stop()
	version, err := bench.RedisVersion(ctx, f.stats[0])
	if err != nil {
		return nil, "", err
	}
	id := runID + "-" + t.Name
	cyclers := f.cyclers(cfg, id)
	rounds := make([][]CostPhase, len(cyclers))
	for r := 0; r < cfg.Rounds; r++ {
		for i, c := range cyclers {
			p, err := f.measure(ctx, cfg, c)
			if err != nil {
				return nil, "", err
			}
			rounds[i] = append(rounds[i], p)
		}
	}
	ct := &CapacityTopo{Topology: t}
	for _, ps := range rounds {
		ct.Phases = append(ct.Phases, medianCost(ps))
	}
	if ct.Memory, err = f.memory(ctx, id, cfg.Concurrency); err != nil {
		return nil, "", err
	}
	return ct, version, nil
}

// startFleet starts t's Redis nodes and gateways.
func startFleet(ctx context.Context, cfg Config, t Topology) (_ *fleet, err error) {
	f := &fleet{}
	defer func() {
		if err != nil {
			f.stop()
		}
	}()
	bin, err := exec.LookPath(cfg.RedisServer)
	if err != nil {
		return nil, err
	}
	var cluster []launch.ClusterNode
	for range t.Masters {
		var args []string
		var bus int
		if t.Cluster {
			if bus, err = launch.FreePort(); err != nil {
				return nil, err
			}
			args = append(args, launch.ClusterArgs(bus)...)
		}
		dir, err := os.MkdirTemp("", "leasegate-bench-redis-")
		if err != nil {
			return nil, err
		}
		f.dirs = append(f.dirs, dir)
		p, err := launch.StartRedis(launch.RedisSpec{Bin: bin, Dir: dir, Args: args})
		if err != nil {
			return nil, err
		}
		f.nodes = append(f.nodes, p)
		f.stats = append(f.stats, redis.NewClient(&redis.Options{Addr: p.Addr()}))
		cluster = append(cluster, launch.ClusterNode{Addr: p.Addr(), Bus: bus})
	}
	redisArgs := []string{"--redis-url", "redis://" + f.nodes[0].Addr()}
	if t.Cluster {
		if err := launch.FormCluster(ctx, cluster); err != nil {
			return nil, err
		}
		var addrs []string
		for _, n := range f.nodes {
			addrs = append(addrs, n.Addr())
		}
		redisArgs = []string{"--redis-cluster-addrs", strings.Join(addrs, ",")}
	}
	if t.Unbatched {
		redisArgs = append(redisArgs, "--no-auto-pipeline")
	}
	_, waiters, _ := memoryCounts(cfg.Concurrency)
	for range t.Gateways {
		gp, err := startGateway(ctx, cfg, redisArgs, waiters)
		if err != nil {
			return nil, err
		}
		f.gateways = append(f.gateways, gp)
		f.bases = append(f.bases, gp.URL())
	}
	// The product bench's keep-alive client, each connection counted.
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	f.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: cfg.Concurrency,
		IdleConnTimeout:     time.Minute,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &countingConn{Conn: c, n: &f.httpIO}, nil
		},
	}}
	return f, nil
}

func (f *fleet) stop() {
	if f.hc != nil {
		f.hc.CloseIdleConnections()
	}
	for _, gp := range f.gateways {
		stopGateway(gp)
	}
	for _, s := range f.stats {
		_ = s.Close()
	}
	for _, p := range f.nodes {
		p.Kill()
	}
	for _, d := range f.dirs {
		_ = os.RemoveAll(d)
	}
}

// cyclers are the capacity phases; worker i talks to gateway i%len.
func (f *fleet) cyclers(cfg Config, id string) []bench.Cycler {
	urls := func(path string, shared bool) []string {
		var us []string
		for i := range cfg.Concurrency {
			u := f.bases[i%len(f.bases)] + path
			if !shared {
				u += strconv.Itoa(i)
			}
			us = append(us, u)
		}
		return us
	}
	cycle := func(label string, urls []string, extra string) *bench.HTTPCycle {
		c := &bench.HTTPCycle{Client: f.hc, Label: label, URLs: urls}
		c.Acquires, c.Releases = bench.OwnerBodies(cfg.Config, extra)
		return c
	}
	handoff := clocked(cycle("handoff", urls("/locks/cap-"+id+"-hot", true), `,"wait_ms":`+strconv.FormatInt(handoffWait.Milliseconds(), 10)), cfg.Concurrency)
	ttl := strconv.Itoa(int(cfg.TTL / time.Second))
	userlock := &bench.HTTPCycle{Client: f.hc, Label: "userlock", URLs: urls("/user-locks/cap-"+id+"/u", false)}
	for range cfg.Concurrency {
		userlock.Acquires = append(userlock.Acquires, []byte(`{"ttl_seconds":`+ttl+`}`))
		userlock.Releases = append(userlock.Releases, nil)
	}
	return []bench.Cycler{
		cycle("lock", urls("/locks/cap-"+id+"-", false), ""),
		handoff,
		cycle("sem", urls("/semaphores/cap-"+id+"-", false), `,"limit":`+strconv.Itoa(semaphoreLimit)),
		newLockSetCycle(f.hc, f.bases, cfg, id),
		newElectionCycle(f.hc, urls("/elections/cap-"+id+"-", false), cfg),
		userlock,
	}
}

// processStats is one reading of every process of a fleet.
type processStats struct {
	at       time.Time
	gateways []time.Duration
	nodes    []bench.RedisStats
	driver   time.Duration
	machine  time.Duration // busy CPU of the whole machine (/proc/stat)
	httpIO   int64
}

func (f *fleet) read(ctx context.Context) (processStats, error) {
	st := processStats{at: time.Now(), httpIO: f.httpIO.Load()}
	for _, gp := range f.gateways {
		cpu, err := pidCPU(gp.Pid())
		if err != nil {
			return st, err
		}
		st.gateways = append(st.gateways, cpu)
	}
	for _, s := range f.stats {
		rs, err := bench.ReadRedisStats(ctx, s, "stats", "memory", "errorstats")
		if err != nil {
			return st, err
		}
		st.nodes = append(st.nodes, rs)
	}
	st.driver, _ = bench.ProcessCPU()
	st.machine = machineBusy()
	return st, nil
}

// measure runs one phase of c and returns its costs per cycle.
func (f *fleet) measure(ctx context.Context, cfg Config, c bench.Cycler) (CostPhase, error) {
	if cfg.Warmup > 0 {
		bench.Drive(ctx, cfg.Concurrency, cfg.Warmup, c)
	}
	before, err := f.read(ctx)
	if err != nil {
		return CostPhase{}, err
	}
	res := bench.Drive(ctx, cfg.Concurrency, cfg.Duration, c)
	after, err := f.read(ctx)
	if err != nil {
		return CostPhase{}, err
	}
	if ctx.Err() != nil {
		return CostPhase{}, ctx.Err()
	}
	p := CostPhase{Name: c.Name(), Cycles: res.Cycles, Errors: res.Errors, FirstError: res.FirstError, RedisCalls: map[string]float64{}}
	if res.Cycles == 0 {
		return p, nil
	}
	n := float64(res.Cycles)
	secs := after.at.Sub(before.at).Seconds()
	p.CyclesPerSec = n / res.Elapsed.Seconds()
	p.RoundsPerSec = []float64{p.CyclesPerSec}
	p.P50ms = ms(res.Quantile(0.50))
	p.P99ms = ms(res.Quantile(0.99))
	ours := after.driver - before.driver
	for i := range after.gateways {
		d := after.gateways[i] - before.gateways[i]
		p.GatewayCPUus += us(d) / n
		ours += d
	}
	for i := range after.nodes {
		d := after.nodes[i].Sub(before.nodes[i])
		cpu := us(d.CPU) / n
		p.RedisCPUus += cpu
		p.RedisMaxCPUus = max(p.RedisMaxCPUus, cpu)
		p.RedisBytes += float64(d.NetIn+d.NetOut) / n
		p.RedisReads += float64(d.Reads) / n
		p.Moved += float64(d.Moved) / n
		for k, calls := range d.Calls {
			p.RedisCalls[k] += float64(calls) / n
		}
		ours += d.CPU
	}
	p.DriverCPUus = us(after.driver-before.driver) / n
	p.HTTPBytes = float64(after.httpIO-before.httpIO) / n
	if secs > 0 {
		p.OtherCores = max(0, (after.machine-before.machine-ours).Seconds()/secs)
	}
	return p, nil
}

// medianCost is the median of each figure over the rounds; cycles and
// errors are summed, the commands are the last round's.
func medianCost(ps []CostPhase) CostPhase {
	m := func(f func(CostPhase) float64) float64 { return bench.MedianBy(ps, f) }
	last := ps[len(ps)-1]
	out := CostPhase{
		Name:          last.Name,
		CyclesPerSec:  m(func(p CostPhase) float64 { return p.CyclesPerSec }),
		P50ms:         m(func(p CostPhase) float64 { return p.P50ms }),
		P99ms:         m(func(p CostPhase) float64 { return p.P99ms }),
		GatewayCPUus:  m(func(p CostPhase) float64 { return p.GatewayCPUus }),
		RedisCPUus:    m(func(p CostPhase) float64 { return p.RedisCPUus }),
		RedisMaxCPUus: m(func(p CostPhase) float64 { return p.RedisMaxCPUus }),
		DriverCPUus:   m(func(p CostPhase) float64 { return p.DriverCPUus }),
		OtherCores:    m(func(p CostPhase) float64 { return p.OtherCores }),
		HTTPBytes:     m(func(p CostPhase) float64 { return p.HTTPBytes }),
		RedisBytes:    m(func(p CostPhase) float64 { return p.RedisBytes }),
		RedisReads:    m(func(p CostPhase) float64 { return p.RedisReads }),
		Moved:         m(func(p CostPhase) float64 { return p.Moved }),
		RedisCalls:    last.RedisCalls,
	}
	for _, p := range ps {
		out.Cycles += p.Cycles
		out.Errors += p.Errors
		out.RoundsPerSec = append(out.RoundsPerSec, p.RoundsPerSec...)
		if out.FirstError == "" {
			out.FirstError = p.FirstError
		}
	}
	return out
}

// memory measures Redis's used_memory per held lock (memoryCounts' locks
// taken and held, then released) and per waiter (its waiters waiting
// acquires of one held lock, spread over the gateways), and the
// gateways' RSS per waiter.
func (f *fleet) memory(ctx context.Context, id string, clients int) (MemoryCost, error) {
	held, waiters, streams := memoryCounts(clients)
	mc := MemoryCost{Held: held, Waiters: waiters, Streams: streams}
	used := func() (int64, error) {
		var sum int64
		for _, s := range f.stats {
			rs, err := bench.ReadRedisStats(ctx, s, "memory")
			if err != nil {
				return 0, err
			}
			sum += rs.UsedMemory
		}
		return sum, nil
	}
	do := func(method, url, body string, want int) error {
		_, err := bench.DoJSON(ctx, f.hc, method, url, []byte(body), want)
		return err
	}
	lockURL := func(i int) string { return fmt.Sprintf("%s/locks/cap-%s-held-%d", f.bases[i%len(f.bases)], id, i) }
	m0, err := used()
	if err != nil {
		return mc, err
	}
	if err := forEach(held, 16, func(i int) error {
		return do(http.MethodPost, lockURL(i), `{"owner":"cap","ttl_seconds":300}`, http.StatusOK)
	}); err != nil {
		return mc, err
	}
	m1, err := used()
	if err != nil {
		return mc, err
	}
	mc.RedisPerLock = float64(m1-m0) / float64(held)
	if err := forEach(held, 16, func(i int) error {
		return do(http.MethodDelete, lockURL(i), `{"owner":"cap"}`, http.StatusNoContent)
	}); err != nil {
		return mc, err
	}

	// Waiters: one held lock, waiters waiting on it.
	path := "/locks/cap-" + id + "-waited"
	if err := do(http.MethodPost, f.bases[0]+path, `{"owner":"cap-holder","ttl_seconds":300}`, http.StatusOK); err != nil {
		return mc, err
	}
	rss := func() (int64, error) {
		var sum int64
		for _, gp := range f.gateways {
			m, err := procMemory(gp)
			if err != nil {
				return 0, err
			}
			sum += m.RSS
		}
		return sum, nil
	}
	// both reads Redis's used_memory and the gateways' RSS.
	both := func() (int64, int64, error) {
		m, err := used()
		if err != nil {
			return 0, 0, err
		}
		r, err := rss()
		return m, r, err
	}
	m2, r2, err := both()
	if err != nil {
		return mc, err
	}
	var sets []*waiterSet
	from := 0
	for i, gp := range f.gateways {
		n := waiters / len(f.gateways)
		if i == 0 {
			n += waiters % len(f.gateways)
		}
		ws := &waiterSet{addr: gp.Spec.Addr, path: path, n: n, from: from}
		from += n
		ws.open(ctx)
		sets = append(sets, ws)
	}
	abort := func() {
		for _, ws := range sets {
			ws.abort()
		}
	}
	if err := launch.Poll(ctx, nil, time.Minute, 20*time.Millisecond, func() error {
		var n float64
		for _, gp := range f.gateways {
			body, err := bench.DoJSON(ctx, f.hc, http.MethodGet, gp.URL()+"/metrics", nil, http.StatusOK)
			if err != nil {
				return err
			}
			var m GatewayMemory
			m.fromMetrics(body)
			n += m.Waiters
		}
		if int(n) != waiters {
			return fmt.Errorf("%.0f of %d waiting", n, waiters)
		}
		return nil
	}); err != nil {
		abort()
		return mc, fmt.Errorf("waiters: %w", err)
	}
	m3, r3, err := both()
	if err != nil {
		abort()
		return mc, err
	}
	mc.RedisPerWaiter = float64(m3-m2) / float64(waiters)
	mc.GatewayRSSPerWaiter = float64(r3-r2) / float64(waiters)
	if err := do(http.MethodDelete, f.bases[0]+path, `{"owner":"cap-holder"}`, http.StatusNoContent); err != nil {
		abort()
		return mc, err
	}
	for _, ws := range sets {
		if !ws.wait(waitersDrain) {
			abort()
			return mc, errors.New("waiters: not every waiter ended after the release")
		}
		if e := ws.failed(); e != nil {
			return mc, fmt.Errorf("waiters: %w", e)
		}
	}

	// Event streams, each on a resource of its own.
	m4, r4, err := both()
	if err != nil {
		return mc, err
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range streams {
		c, err := openStream(f.gateways[i%len(f.gateways)].Spec.Addr, fmt.Sprintf("/locks/cap-%s-watched-%d/events", id, i))
		if err != nil {
			return mc, fmt.Errorf("event streams: %w", err)
		}
		conns = append(conns, c)
	}
	m5, r5, err := both()
	if err != nil {
		return mc, err
	}
	mc.RedisPerStream = float64(m5-m4) / float64(streams)
	mc.GatewayRSSPerStream = float64(r5-r4) / float64(streams)
	return mc, nil
}

// openStream opens an event stream at path and reads it up to the end
// of its first event (the state).
func openStream(addr, path string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nAccept: text/event-stream\r\n\r\n"); err != nil {
		_ = c.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(path + ": " + resp.Status)
	}
	var body *bufio.Reader
	if err == nil {
		body = bufio.NewReader(resp.Body)
	}
	for sawEvent := false; err == nil; {
		var line string
		if line, err = body.ReadString('\n'); err == nil {
			if strings.HasPrefix(line, "event:") {
				sawEvent = true
			} else if sawEvent && strings.TrimSpace(line) == "" {
				break
			}
		}
	}
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// forEach calls do(i) for i in 0..n-1 on par goroutines; the first
// error wins.
func forEach(n, par int, do func(i int) error) error {
	var next atomic.Int64
	errs := make(chan error, par)
	for range par {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					errs <- nil
					return
				}
				if err := do(i); err != nil {
					next.Store(int64(n))
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range par {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// countingConn adds the bytes read and written to n.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	k, err := c.Conn.Read(b)
	c.n.Add(int64(k))
	return k, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	k, err := c.Conn.Write(b)
	c.n.Add(int64(k))
	return k, err
}

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times (100 on
// every architecture Go supports).
const clockTick = 10 * time.Millisecond

// pidCPU is a process's utime+stime from /proc/PID/stat.
func pidCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("a gateway's CPU (Linux /proc only): %w", err)
	}
	// The fields after the command name (in parentheses) start at the
	// third: utime and stime are the 14th and 15th.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	fs := strings.Fields(string(data[i+1:]))
	if len(fs) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, data)
	}
	var sum int64
	for _, f := range fs[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		sum += n
	}
	return time.Duration(sum) * clockTick, nil
}

// machineBusy is the CPU time every core of the machine has spent busy
// (/proc/stat's first line, all but idle and iowait); 0 when unreadable.
func machineBusy() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fs := strings.Fields(line)
	var sum int64
	for i, f := range fs[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest is in user
			continue
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		sum += n
	}
	return time.Duration(sum) * clockTick
}

// loadAvg is /proc/loadavg's 1-minute load average; 0 when unreadable.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(data))[0], 64)
	return f
}
