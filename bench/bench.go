// Package bench is leasegate's load and benchmark tool, with two entry
// points that share one latency histogram, one loopback rule and one
// report style:
//
//   - Run (`leasegate bench`) measures the gateway's lock cycle side by
//     side with the go-redis floor, in one run, on one Redis, at one
//     concurrency.
//   - Load (`leasegate load`, load.go) drives a running gateway over HTTP
//     with a bounded load and checks fencing.
//
// A cycle is "take a lock on a free resource, then release it". The floor
// does it directly with go-redis (SET key owner NX PX ttl, then EVALSHA of
// a compare-and-delete script); the gateway phase does it as two HTTP
// requests (POST /locks/{r}, DELETE /locks/{r}) to a gateway built by
// server.New in this process, listening on 127.0.0.1:0 and driven over
// real loopback TCP with a keep-alive client. Each round runs the floor,
// then the gateway, for the same duration; the report gives the median of
// the rounds and the gateway/floor ratio of each round's own pair, so a
// noisy machine slows both sides of a ratio alike.
//
// `leasegate bench` and `leasegate load` (cmd/leasegate) parse flags into
// a Config or LoadConfig and call Run or Load. docs/benchmarks.md records
// their figures.
package bench

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

//go:embed unlock.lua
var unlockSrc string

// unlock is the floor's release: compare-and-delete (unlock.lua).
var unlock = redis.NewScript(unlockSrc)

// Limits: a run is bounded and stops by itself.
const (
	MaxDuration    = 5 * time.Minute
	MaxRounds      = 15
	MaxConcurrency = 4096
)

// Config is one benchmark run.
type Config struct {
	// Concurrency is the number of clients doing cycles at the same time,
	// in both phases.
	Concurrency int
	// Duration is how long each phase of each round is measured.
	Duration time.Duration
	// Warmup runs each phase unmeasured for this long before it is
	// measured (connections, script cache, JIT-free but cache-warm).
	Warmup time.Duration
	// Rounds of floor+gateway; the report shows the median.
	Rounds int
	// TTL of every lock taken (whole seconds for the gateway).
	TTL time.Duration

	// RedisURL is a loopback Redis to use; empty starts RedisServer on a
	// free loopback port with --save "" --appendonly no, stopped at the end.
	// A Redis of one's own must be otherwise idle (its INFO counters are
	// read) and keeps the gateway's fence keys until they expire (24 h).
	RedisURL string
	// RedisServer is the redis-server binary (looked up on PATH).
	RedisServer string

	// GatewayLogLevel is the gateway's log level ("info": one access-log
	// line per request, as `leasegate serve` does by default); the lines
	// are encoded and written to GatewayLog (nil: discarded).
	GatewayLogLevel string
	GatewayLog      io.Writer

	// Etcd asks for the etcd phases (bench/etcd.go): etcd's
	// concurrency.Mutex measured by the program of EtcdBench, a module
	// directory (built with go build) or a built binary; empty looks for
	// DefaultEtcdBench under the working directory, and skips with a note
	// when there is none. EtcdEndpoints, when set, is an etcd to use
	// instead of the program's embedded server.
	Etcd          bool
	EtcdBench     string
	EtcdEndpoints string

	// Handoff adds, to every round, the waiting hand-off of one resource
	// between all clients and its raw-Redis floor (handoff.go);
	// Primitives the semaphore and claim cycles (primitives.go).
	// Tracing also runs the lock cycle on two more gateways with tracing
	// on, sampling 100 % and 1 % of requests, exporting over OTLP/HTTP to
	// a local sink that discards (tracing.go, docs/benchmarks.md).
	Tracing    bool
	Handoff    bool
	Primitives bool
	// LockSets adds the lock-set cycle (a set of 8, locksets.go),
	// compared with the gateway's single-lock cycle of the same round.
	LockSets bool
	// Waiters, when above 0, makes the run a measurement of its own
	// instead of the rounds: the RSS of a `leasegate serve` process
	// (GatewayCommand, with GatewayEnv added to the environment) holding
	// that many waiting acquires (waiters.go).
	Waiters int
	// Capacity, when true, makes the run the capacity measurement
	// (capacity.go) instead of the rounds: gateway processes started with
	// GatewayCommand, on Redis nodes it starts with RedisServer, for each
	// of CapacityTopologies (names of Topologies; empty: all).
	Capacity           bool
	CapacityTopologies []string
	GatewayCommand     string
	GatewayEnv         []string

	// CPUProfile, when not nil, receives a pprof CPU profile of the
	// gateway phase of the last round. Driver goroutines carry the label
	// role=driver, so `go tool pprof -tagignore role=driver` is the
	// gateway alone.
	CPUProfile io.Writer
	// MemProfile, when not nil, receives the allocs profile at the end
	// of the run (every phase; the drivers' stacks go through this
	// package or net/http.(*persistConn), see docs/benchmarks.md).
	MemProfile io.Writer
}

// DefaultConfig returns the defaults of `leasegate bench`.
func DefaultConfig() Config {
	return Config{
		Concurrency:     64,
		Duration:        10 * time.Second,
		Warmup:          time.Second,
		Rounds:          3,
		TTL:             30 * time.Second,
		RedisServer:     "redis-server",
		GatewayLogLevel: "info",
	}
}

// Validate checks the bounds.
func (c Config) Validate() error {
	var errs []error
	if c.Concurrency < 1 || c.Concurrency > MaxConcurrency {
		errs = append(errs, fmt.Errorf("concurrency must be 1..%d, got %d", MaxConcurrency, c.Concurrency))
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration must be positive and at most %v, got %v", MaxDuration, c.Duration))
	}
	if c.Warmup < 0 || c.Warmup > MaxDuration {
		errs = append(errs, fmt.Errorf("warmup must be 0..%v, got %v", MaxDuration, c.Warmup))
	}
	if c.Rounds < 1 || c.Rounds > MaxRounds {
		errs = append(errs, fmt.Errorf("rounds must be 1..%d, got %d", MaxRounds, c.Rounds))
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		errs = append(errs, fmt.Errorf("ttl must be whole seconds, at least 1s, got %v", c.TTL))
	}
	if c.RedisURL != "" {
		if err := checkLoopback("-redis-url", c.RedisURL); err != nil {
			errs = append(errs, err)
		}
	} else if c.RedisServer == "" {
		errs = append(errs, errors.New("redis-server binary or redis-url needed"))
	}
	if c.EtcdBench != "" {
		if _, err := os.Stat(c.EtcdBench); err != nil {
			errs = append(errs, fmt.Errorf("etcd-bench: %w", err))
		}
	}
	errs = append(errs, c.validatePhases()...)
	return errors.Join(errs...)
}

// Run runs every round and returns the report. It stops early, with the
// rounds done so far, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	runID := fmt.Sprintf("%x", time.Now().UnixNano())
	if cfg.Capacity {
		capRep, err := runCapacity(ctx, cfg, runID)
		if err != nil {
			return nil, err
		}
		return &Report{Capacity: capRep}, nil
	}
	redisURL := cfg.RedisURL
	if redisURL == "" {
		p, err := startRedis(ctx, cfg.RedisServer)
		if err != nil {
			return nil, err
		}
		defer p.stop()
		redisURL = p.url()
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("bench: redis-url: %w", err)
	}
	// The stats client is the benchmark's own, apart from both phases.
	stats := redis.NewClient(opt)
	defer stats.Close()
	version, err := redisVersion(ctx, stats)
	if err != nil {
		return nil, err
	}

	rep := &Report{
		Concurrency:  cfg.Concurrency,
		Duration:     cfg.Duration,
		GoVersion:    runtime.Version(),
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
		NumCPU:       runtime.NumCPU(),
		RedisVersion: version,
	}
	if cfg.Waiters > 0 {
		rep.Waiters, err = runWaiters(ctx, cfg, redisURL, runID)
		if err != nil {
			return nil, err
		}
		return rep, nil
	}
	var etcd *etcdRunner // nil: no etcd phases
	if cfg.Etcd {
		if etcd, err = startEtcd(ctx, cfg, rep); err != nil {
			return nil, err
		}
		defer etcd.close()
	}

	floor := newFloor(opt, cfg, runID)
	defer floor.close()
	gw, err := startGateway(redisURL, cfg)
	if err != nil {
		return nil, err
	}
	defer gw.close()
	locks := gw.cycle(cfg, "gateway", "/locks/bench-"+runID+"-", false, "")

	extras, err := newExtras(ctx, opt, cfg, runID, gw)
	if err != nil {
		return nil, err
	}
	defer extras.close()

	if rep.Scripts, err = scriptCommands(ctx, stats, append([]cycler{floor, locks}, extras.cyclers()...)...); err != nil {
		return nil, err
	}

	for r := 0; r < cfg.Rounds && ctx.Err() == nil; r++ {
		var prof io.Writer
		if r == cfg.Rounds-1 {
			prof = cfg.CPUProfile
		}
		rd, err := runRound(ctx, stats, cfg, floor, locks, extras, etcd, prof)
		if err != nil {
			if ctx.Err() != nil {
				break // interrupted: report the rounds done
			}
			return nil, err
		}
		rep.Rounds = append(rep.Rounds, rd)
	}
	if len(rep.Rounds) == 0 {
		return nil, fmt.Errorf("bench: no round finished: %w", ctx.Err())
	}
	if len(rep.Rounds) < cfg.Rounds {
		rep.Notes = append(rep.Notes, fmt.Sprintf("interrupted: %d of %d rounds done", len(rep.Rounds), cfg.Rounds))
	}
	rep.summarize()
	if cfg.MemProfile != nil {
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(cfg.MemProfile, 0); err != nil {
			return rep, fmt.Errorf("bench: memprofile: %w", err)
		}
	}
	return rep, nil
}

// runRound runs one round: the floor, the gateway's lock phase (with a
// CPU profile to prof, when not nil), the optional phases and etcd's.
func runRound(ctx context.Context, stats *redis.Client, cfg Config, floor, locks cycler, extras *extras, etcd *etcdRunner, prof io.Writer) (Round, error) {
	var rd Round
	var err error
	if rd.Floor, err = runPhase(ctx, stats, cfg, floor, nil); err != nil {
		return rd, err
	}
	if rd.Gateway, err = runPhase(ctx, stats, cfg, locks, prof); err != nil {
		return rd, err
	}
	if rd.Floor.CyclesPerSec > 0 {
		rd.Ratio = rd.Gateway.CyclesPerSec / rd.Floor.CyclesPerSec
	}
	if rd.Phases, err = extras.run(ctx, stats, cfg, rd.Floor, rd.Gateway); err != nil {
		return rd, err
	}
	var handoffs float64
	for _, p := range rd.Phases {
		if p.Name == "handoff" {
			handoffs = p.CyclesPerSec
		}
	}
	return rd, etcd.round(rd.Gateway.CyclesPerSec, handoffs)
}

func redisVersion(ctx context.Context, rdb *redis.Client) (string, error) {
	txt, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("bench: redis: %w", err)
	}
	for line := range strings.Lines(txt) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "unknown", nil
}

// median of xs (the mean of the middle two for an even count); 0 when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianBy is the median of f over xs.
func medianBy[T any](xs []T, f func(T) float64) float64 {
	var vs []float64
	for _, x := range xs {
		vs = append(vs, f(x))
	}
	return median(vs)
}
