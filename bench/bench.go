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
// a compare-and-delete script); the bare HTTP gateway (bare.go) does the
// same two steps behind POST and DELETE /locks/{r} and nothing else; the
// gateway phase sends the same two requests to a gateway built by
// server.New in this process. Both HTTP phases listen on 127.0.0.1:0 and
// are driven over real loopback TCP with one keep-alive client. Each
// round runs the floor, the bare gateway, then the gateway, for the same
// duration; the report gives the median of the rounds and the ratios of
// each round's own phases, so a noisy machine slows both sides of a ratio
// alike.
//
// `leasegate bench` and `leasegate load` (cmd/leasegate) parse flags into
// a Config or LoadConfig and call Run or Load. The maintainers' tooling
// (the tools/bench module: capacity model, etcd comparison, waiter
// memory, more phases) builds on Open, RunPhase and Drive. docs/benchmarks.md
// records their figures.
package bench

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
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
	return errors.Join(errs...)
}

// Rig is what the rounds of a run measure: the Redis (started, or
// cfg.RedisURL), a stats client of its own apart from every phase, the
// floor and the gateway. Open builds it, Round runs one round, Close
// stops what Open started.
type Rig struct {
	Config   Config
	RedisURL string
	// Options are the Redis's, for a phase's own client.
	Options *redis.Options
	Stats   *redis.Client
	Gateway *Gateway
	// Floor, Bare and Locks are the lock cycle's three phases: go-redis,
	// the bare HTTP gateway and the gateway.
	Floor, Bare, Locks Cycler

	closers []func()
}

// Open validates cfg, starts a redis-server unless cfg.RedisURL names
// one, and starts the gateway. runID makes the run's keys its own.
func Open(ctx context.Context, cfg Config, runID string) (_ *Rig, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	r := &Rig{Config: cfg, RedisURL: cfg.RedisURL}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.RedisURL == "" {
		p, stop, err := startRedis(cfg.RedisServer)
		if err != nil {
			return nil, err
		}
		r.closers = append(r.closers, stop)
		r.RedisURL = "redis://" + p.Addr()
	}
	if r.Options, err = redis.ParseURL(r.RedisURL); err != nil {
		return nil, fmt.Errorf("bench: redis-url: %w", err)
	}
	r.Stats = redis.NewClient(r.Options)
	r.closers = append(r.closers, func() { _ = r.Stats.Close() })
	floor := newFloor(r.Options, cfg, runID)
	r.closers = append(r.closers, floor.close)
	r.Floor = floor
	bare, err := startBare(r.Options)
	if err != nil {
		return nil, fmt.Errorf("bench: bare gateway: %w", err)
	}
	r.closers = append(r.closers, bare.close)
	if r.Gateway, err = StartGateway(r.RedisURL, cfg, nil); err != nil {
		return nil, err
	}
	r.closers = append(r.closers, r.Gateway.Close)
	r.Locks = r.Gateway.Cycle(cfg, "gateway", "/locks/bench-"+runID+"-", false, "")
	// The same requests, with the same client, to the bare gateway.
	bc := newHTTPCycle(r.Gateway.Client(), bare.url()+"/locks/bench-"+runID+"-bare-", cfg, "bare http", false, "")
	bc.Commands = []string{"set", "evalsha", "eval"}
	r.Bare = bc
	return r, nil
}

// Close stops what Open started, in reverse order.
func (r *Rig) Close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// NewReport is a report of this rig's run with its conditions filled in.
func (r *Rig) NewReport(ctx context.Context) (*Report, error) {
	version, err := RedisVersion(ctx, r.Stats)
	if err != nil {
		return nil, err
	}
	return &Report{
		Concurrency:  r.Config.Concurrency,
		Duration:     r.Config.Duration,
		GoVersion:    runtime.Version(),
		GOMAXPROCS:   runtime.GOMAXPROCS(0),
		NumCPU:       runtime.NumCPU(),
		RedisVersion: version,
	}, nil
}

// Round runs one round: the floor, the bare HTTP gateway, then the
// gateway's lock phase (with a CPU profile to prof, when not nil).
func (r *Rig) Round(ctx context.Context, prof io.Writer) (Round, error) {
	var rd Round
	var err error
	if rd.Floor, err = RunPhase(ctx, r.Stats, r.Config, r.Floor, nil); err != nil {
		return rd, err
	}
	if rd.Bare, err = RunPhase(ctx, r.Stats, r.Config, r.Bare, nil); err != nil {
		return rd, err
	}
	if rd.Gateway, err = RunPhase(ctx, r.Stats, r.Config, r.Locks, prof); err != nil {
		return rd, err
	}
	if rd.Floor.CyclesPerSec > 0 {
		rd.Ratio = rd.Gateway.CyclesPerSec / rd.Floor.CyclesPerSec
		rd.BareRatio = rd.Bare.CyclesPerSec / rd.Floor.CyclesPerSec
	}
	if rd.Bare.CyclesPerSec > 0 {
		rd.OverBare = rd.Gateway.CyclesPerSec / rd.Bare.CyclesPerSec
	}
	return rd, nil
}

// Run runs every round and returns the report. It stops early, with the
// rounds done so far, when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	runID := fmt.Sprintf("%x", time.Now().UnixNano())
	rig, err := Open(ctx, cfg, runID)
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	rep, err := rig.NewReport(ctx)
	if err != nil {
		return nil, err
	}
	if rep.Scripts, err = ScriptCommands(ctx, rig.Stats, rig.Floor, rig.Bare, rig.Locks); err != nil {
		return nil, err
	}
	if err := rig.Rounds(ctx, rep, rig.Round); err != nil {
		return nil, err
	}
	if cfg.MemProfile != nil {
		runtime.GC()
		if err := pprof.Lookup("allocs").WriteTo(cfg.MemProfile, 0); err != nil {
			return rep, fmt.Errorf("bench: memprofile: %w", err)
		}
	}
	return rep, nil
}

// Rounds runs round cfg.Rounds times into rep (the last one with
// cfg.CPUProfile) and summarizes them. When ctx ends it stops, with the
// rounds done so far and a note; an error when no round finished.
func (r *Rig) Rounds(ctx context.Context, rep *Report, round func(ctx context.Context, prof io.Writer) (Round, error)) error {
	n := r.Config.Rounds
	for i := 0; i < n && ctx.Err() == nil; i++ {
		var prof io.Writer
		if i == n-1 {
			prof = r.Config.CPUProfile
		}
		rd, err := round(ctx, prof)
		if err != nil {
			if ctx.Err() != nil {
				break // interrupted: report the rounds done
			}
			return err
		}
		rep.Rounds = append(rep.Rounds, rd)
	}
	if len(rep.Rounds) == 0 {
		return fmt.Errorf("bench: no round finished: %w", ctx.Err())
	}
	if len(rep.Rounds) < n {
		rep.Notes = append(rep.Notes, fmt.Sprintf("interrupted: %d of %d rounds done", len(rep.Rounds), n))
	}
	rep.summarize()
	return nil
}

// Flags binds the flags of a run's settings in fs: those of `leasegate
// bench` but the report's and the profiles'.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Concurrency, "c", c.Concurrency, "concurrent clients, in every phase")
	fs.DurationVar(&c.Duration, "duration", c.Duration, "measured time of each phase of each round, at most "+MaxDuration.String())
	fs.DurationVar(&c.Warmup, "warmup", c.Warmup, "unmeasured time before each phase")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "rounds of every phase; the median is reported")
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "lease of every lock, whole seconds")
	fs.StringVar(&c.RedisURL, "redis-url", c.RedisURL, "use this loopback Redis instead of starting redis-server")
	fs.StringVar(&c.RedisServer, "redis-server", c.RedisServer, "redis-server binary to start")
	fs.StringVar(&c.GatewayLogLevel, "log-level", c.GatewayLogLevel, "the gateway's log level (its lines are encoded, then discarded)")
}

// RedisVersion is the redis_version of INFO server.
func RedisVersion(ctx context.Context, rdb *redis.Client) (string, error) {
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

// MedianBy is the median of f over xs.
func MedianBy[T any](xs []T, f func(T) float64) float64 {
	var vs []float64
	for _, x := range xs {
		vs = append(vs, f(x))
	}
	return median(vs)
}
