// Command etcd-bench is the etcd side of the tooling's -etcd (tools/bench): it
// measures etcd's own lock recipe (client/v3/concurrency.Mutex) the way
// package bench measures the gateway, on the same machine, so the two can
// be put side by side.
//
// It is a module of its own (tools/bench/etcd/go.mod) so that neither the
// gateway's module nor the tooling's depends on etcd, gRPC and their
// dependencies: their go build/vet/test ./... do not descend into it.
//
// It starts an embedded etcd server (go.etcd.io/etcd/server/v3/embed, one
// member, data in a temporary directory, client and peer URLs on free
// loopback ports) unless -endpoints names one, prints one JSON line
// describing it (Hello), then reads phase names from stdin, one per line,
// and answers each with one JSON line (Result):
//
//	lock     the uncontended lock cycle: each of -c clients locks and
//	         unlocks a mutex of its own (NewMutex on one shared session,
//	         Lock then Unlock); cycles/s and p50/p99 of a cycle.
//	handoff  the contended hand-off: -c clients, each with a session of its
//	         own, take turns on ONE mutex (Lock, Unlock, again); hand-offs/s
//	         and release-to-next-holder latency p50/p99.
//
// Each phase runs -warmup unmeasured, then -duration measured. At the end
// of stdin the server is stopped and its directory removed. By hand:
//
//	printf 'lock\nhandoff\n' | go run . -c 64 -duration 5s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Hello is the first line of output: what is being measured.
type Hello struct {
	EtcdVersion string `json:"etcd_version"`
	GoVersion   string `json:"go_version"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	// Embedded: this process runs the etcd server too (its CPU is in
	// ProcessCPUus); DataDir is then its data directory and Fsync whether
	// its WAL is fsynced (etcd's default; -unsafe-no-fsync turns it off).
	Embedded  bool   `json:"embedded"`
	Endpoints string `json:"endpoints"`
	DataDir   string `json:"data_dir,omitempty"`
	Fsync     bool   `json:"fsync"`
}

// Result is one phase, one line of output. Latencies are in milliseconds.
type Result struct {
	Phase      string  `json:"phase"`
	Clients    int     `json:"clients"`
	Ops        int64   `json:"ops"` // lock: cycles; handoff: hand-offs
	Errors     int64   `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	OpsPerSec  float64 `json:"ops_per_sec"`
	// lock: a whole cycle (Lock + Unlock). handoff: from the holder's
	// Unlock returning to the next holder's Lock returning (0 when the
	// next holder had the lock before the Unlock call returned; Early
	// counts those).
	P50ms float64 `json:"p50_ms"`
	P99ms float64 `json:"p99_ms"`
	// handoff only: from the holder calling Unlock to the next holder's
	// Lock returning (always positive: the next Lock cannot return before
	// the delete is sent).
	CallP50ms float64 `json:"call_p50_ms,omitempty"`
	CallP99ms float64 `json:"call_p99_ms,omitempty"`
	Early     int64   `json:"early,omitempty"`
	// Violations: times two clients held the one mutex at once (handoff);
	// must be 0.
	Violations int64 `json:"violations"`
	// ProcessCPUus is this process's CPU per op (getrusage): the client
	// driver, and the server too when it is embedded.
	ProcessCPUus float64 `json:"process_cpu_us_per_op"`
}

type config struct {
	clients       int
	duration      time.Duration
	warmup        time.Duration
	endpoints     string
	sessionTTL    int
	unsafeNoFsync bool
	prefix        string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.clients, "c", 64, "concurrent clients")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured time of each phase")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured time before each phase")
	flag.StringVar(&cfg.endpoints, "endpoints", "", "comma-separated etcd client URLs to use instead of starting an embedded server (an idle etcd of one's own; keys under -prefix)")
	flag.IntVar(&cfg.sessionTTL, "session-ttl", 60, "TTL of the sessions' leases, seconds")
	flag.BoolVar(&cfg.unsafeNoFsync, "unsafe-no-fsync", false, "embedded server: do not fsync the WAL (etcd's --unsafe-no-fsync)")
	flag.StringVar(&cfg.prefix, "prefix", fmt.Sprintf("/leasegate-bench/%x/", time.Now().UnixNano()), "key prefix of the run")
	flag.Parse()
	if err := run(cfg, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "etcd-bench:", err)
		os.Exit(1)
	}
}

func run(cfg config, in io.Reader, out io.Writer) error {
	if cfg.clients < 1 || cfg.duration <= 0 || cfg.warmup < 0 || cfg.sessionTTL < 1 {
		return fmt.Errorf("need -c >= 1, -duration > 0, -warmup >= 0, -session-ttl >= 1")
	}
	hello := Hello{
		EtcdVersion: version.Version,
		GoVersion:   runtime.Version(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		Endpoints:   cfg.endpoints,
	}
	if cfg.endpoints == "" {
		srv, err := startEmbedded(cfg.unsafeNoFsync)
		if err != nil {
			return err
		}
		defer srv.close()
		hello.Embedded, hello.Endpoints, hello.DataDir, hello.Fsync = true, srv.endpoint, srv.dir, !cfg.unsafeNoFsync
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(hello.Endpoints, ","),
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	cancel()
	if err != nil {
		return fmt.Errorf("status of %s: %w", cli.Endpoints()[0], err)
	}
	if !hello.Embedded {
		hello.EtcdVersion = st.Version // the server's, not this client's
	}

	b := &bencher{cfg: cfg, cli: cli}
	defer b.close()
	enc := json.NewEncoder(out)
	if err := enc.Encode(hello); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var phase func(time.Duration) (Result, error)
		switch name := strings.TrimSpace(sc.Text()); name {
		case "":
			continue
		case "lock":
			phase = b.lock
		case "handoff":
			phase = b.handoff
		default:
			return fmt.Errorf("unknown phase %q (want lock or handoff)", name)
		}
		if cfg.warmup > 0 {
			if _, err := phase(cfg.warmup); err != nil {
				return err
			}
		}
		cpu0 := processCPU()
		res, err := phase(cfg.duration)
		if err != nil {
			return err
		}
		if res.Ops > 0 {
			res.ProcessCPUus = float64(processCPU()-cpu0) / float64(time.Microsecond) / float64(res.Ops)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return sc.Err()
}

// embedded is an etcd server in this process.
type embedded struct {
	etcd     *embed.Etcd
	dir      string
	endpoint string
	level    zap.AtomicLevel
}

func startEmbedded(noFsync bool) (*embedded, error) {
	dir, err := os.MkdirTemp("", "leasegate-bench-etcd-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	ec := embed.NewConfig()
	ec.Name = "bench"
	ec.Dir = dir
	ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	// Errors go to stderr, until close: etcd logs its own shutdown as
	// errors ("server closed"), which would only be noise.
	level := zap.NewAtomicLevelAt(zap.ErrorLevel)
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.OutputPaths, zc.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	lg, err := zc.Build()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	ec.UnsafeNoFsync = noFsync
	e, err := embed.StartEtcd(ec)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("embedded etcd: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		_ = os.RemoveAll(dir)
		return nil, errors.New("embedded etcd not ready after 30s")
	}
	return &embedded{etcd: e, dir: dir, endpoint: client.String(), level: level}, nil
}

func (s *embedded) close() {
	s.level.SetLevel(zap.FatalLevel)
	s.etcd.Close()
	_ = os.RemoveAll(s.dir)
}

// freePorts returns n distinct free loopback ports (held together while
// they are picked, so they differ).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// bencher runs the phases; its sessions are made once and kept.
type bencher struct {
	cfg    config
	cli    *clientv3.Client
	shared *concurrency.Session   // lock: every client's mutex
	own    []*concurrency.Session // handoff: one per client
}

func (b *bencher) close() {
	for _, s := range append(b.own, b.shared) {
		if s != nil {
			_ = s.Close() // revokes the lease: its keys go
		}
	}
}

func (b *bencher) session() (*concurrency.Session, error) {
	return concurrency.NewSession(b.cli, concurrency.WithTTL(b.cfg.sessionTTL))
}

// lock: each client cycles on a mutex of its own, on one shared session
// (a lease kept alive by one stream, as one process would use etcd).
func (b *bencher) lock(d time.Duration) (Result, error) {
	if b.shared == nil {
		s, err := b.session()
		if err != nil {
			return Result{}, fmt.Errorf("session: %w", err)
		}
		b.shared = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute) // guards a hang only
	defer cancel()
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		errs errorCount
	)
	lats := make([][]time.Duration, b.cfg.clients)
	start := time.Now()
	for i := range b.cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := concurrency.NewMutex(b.shared, b.cfg.prefix+"lock/"+strconv.Itoa(i))
			for !stop.Load() && ctx.Err() == nil {
				t0 := time.Now()
				if err := m.Lock(ctx); err != nil {
					errs.add(err)
					continue
				}
				if err := m.Unlock(ctx); err != nil {
					errs.add(err)
					continue
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		}()
	}
	time.Sleep(d) // the measured time itself; the workers stop on the flag
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lats...)
	slices.Sort(all)
	res := Result{Phase: "lock", Clients: b.cfg.clients, Ops: int64(len(all)), Seconds: elapsed.Seconds()}
	res.Errors, res.FirstError = errs.get()
	res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	res.P50ms, res.P99ms = ms(quantile(all, 0.50)), ms(quantile(all, 0.99))
	return res, nil
}

// turn is one holding of the contended mutex, in time since the phase's
// start.
type turn struct {
	locked, unlockCalled, unlocked time.Duration
}

// handoff: every client has a session (a lease) of its own, as separate
// processes would, and all take turns on one mutex.
func (b *bencher) handoff(d time.Duration) (Result, error) {
	for len(b.own) < b.cfg.clients {
		s, err := b.session()
		if err != nil {
			return Result{}, fmt.Errorf("session: %w", err)
		}
		b.own = append(b.own, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute) // guards a hang only
	defer cancel()
	var (
		stop       atomic.Bool
		held       atomic.Bool
		violations atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		turns      []turn
		errs       errorCount
	)
	start := time.Now()
	for i := range b.cfg.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := concurrency.NewMutex(b.own[i], b.cfg.prefix+"handoff")
			// A client waiting when the time is up still gets its turn:
			// the others' releases drain the queue.
			for !stop.Load() && ctx.Err() == nil {
				if err := m.Lock(ctx); err != nil {
					errs.add(err)
					continue
				}
				locked := time.Since(start)
				if !held.CompareAndSwap(false, true) {
					violations.Add(1)
				}
				mu.Lock()
				k := len(turns)
				turns = append(turns, turn{locked: locked})
				mu.Unlock()
				held.Store(false) // still ours until the delete below lands
				called := time.Since(start)
				err := m.Unlock(ctx)
				unlocked := time.Since(start)
				mu.Lock()
				turns[k].unlockCalled, turns[k].unlocked = called, unlocked
				mu.Unlock()
				if err != nil {
					errs.add(err)
				}
			}
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	res := handoffResult(turns, d)
	res.Clients = b.cfg.clients
	res.Errors, res.FirstError = errs.get()
	res.Violations = violations.Load()
	return res, nil
}

// handoffResult measures the hand-offs among turns (in the order they
// were taken) whose new holder got the lock within the first d.
func handoffResult(turns []turn, d time.Duration) Result {
	res := Result{Phase: "handoff", Seconds: d.Seconds()}
	var fromReturn, fromCall []time.Duration
	for k := 1; k < len(turns) && turns[k].locked < d; k++ {
		prev, next := turns[k-1], turns[k]
		res.Ops++
		fromCall = append(fromCall, next.locked-prev.unlockCalled)
		if l := next.locked - prev.unlocked; l > 0 {
			fromReturn = append(fromReturn, l)
		} else {
			fromReturn = append(fromReturn, 0)
			res.Early++
		}
	}
	slices.Sort(fromReturn)
	slices.Sort(fromCall)
	res.OpsPerSec = float64(res.Ops) / d.Seconds()
	res.P50ms, res.P99ms = ms(quantile(fromReturn, 0.50)), ms(quantile(fromReturn, 0.99))
	res.CallP50ms, res.CallP99ms = ms(quantile(fromCall, 0.50)), ms(quantile(fromCall, 0.99))
	return res
}

// errorCount counts errors and keeps the first.
type errorCount struct {
	mu    sync.Mutex
	n     int64
	first error
}

func (e *errorCount) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if e.first == nil {
		e.first = err
	}
}

func (e *errorCount) get() (int64, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.first == nil {
		return e.n, ""
	}
	return e.n, e.first.Error()
}

// quantile of sorted durations (nearest rank; package bench reads the
// same rank from its histogram, at most 1.6 % above).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
