// Load (`leasegate load`) drives a running gateway over HTTP with a
// bounded load and sums it up: requests, errors by status and problem
// type, throughput, latency percentiles per operation, acquired and
// contended counts, and a fencing check (no two owners ever believed they
// held the same resource; each new holder's token is above the previous
// one's).
//
// A run stops by itself, after LoadConfig.Duration or after exactly
// LoadConfig.Requests requests, and loads only a gateway on a loopback
// address unless LoadConfig.AllowRemote. It talks to the gateway through
// the client package only (docs/benchmarks.md, docs/configuration.md).

package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasegate/leasegate/client"
)

// Limits of a load run besides MaxDuration: it is bounded and stops by
// itself.
const (
	MaxLoadConcurrency = 1024
	MaxResources       = 1 << 20
)

const (
	// requestTimeout bounds one request; requests in flight when the run
	// ends are allowed to finish (a won lease is always released).
	requestTimeout = 30 * time.Second
	// maxViolationsShown is how many fencing violations are described;
	// all are counted.
	maxViolationsShown = 10
)

// Scenario is what each worker does, over and over (docs/benchmarks.md).
type Scenario string

const (
	// AcquireRelease: worker i acquires resource i mod Resources and
	// releases it.
	AcquireRelease Scenario = "acquire-release"
	// Contended: every attempt picks one of Resources at random with a
	// fresh owner, so many owners meet on few resources.
	Contended Scenario = "contended"
	// UserLock: POST /user-locks attempts over Resources user ids.
	UserLock Scenario = "user-lock"
	// Waiting: worker i is one owner that, every cycle, picks one of
	// Resources at random (sometimes the one it just released), acquires
	// it waiting up to Wait, holds it Hold and releases it: a worker loop
	// of waiting acquires (docs/waiting.md).
	Waiting Scenario = "waiting"
)

// LoadConfig is one run. Each field is a flag of `leasegate load` (--url,
// --api-key, ...; docs/configuration.md), and Validate's errors name the
// fields by those flags, which is how a user meets them.
type LoadConfig struct {
	URL         string        // gateway base URL; several, comma-separated: worker i uses the (i mod n)-th
	APIKey      string        // sent as Authorization: Bearer; empty: none
	Duration    time.Duration // how long to run, at most MaxDuration
	Requests    int           // stop after exactly this many requests; 0: run for Duration
	Concurrency int           // workers sending requests at the same time
	// Resources is how many distinct resource names (user ids for
	// UserLock) the workers use; 0: one per worker, but 1 for Contended.
	Resources   int
	Scenario    Scenario
	TTL         time.Duration // lease (or user-lock window), whole seconds
	AllowRemote bool          // allow a gateway that is not on a loopback address
	// Wait is the wait_ms of Waiting's acquires, Hold how long Waiting
	// holds each lease before its release.
	Wait, Hold time.Duration
}

// DefaultLoadConfig is the configuration of `leasegate load` without flags.
func DefaultLoadConfig() LoadConfig {
	return LoadConfig{
		URL:         "http://127.0.0.1:8080",
		Duration:    10 * time.Second,
		Concurrency: 8,
		Scenario:    AcquireRelease,
		TTL:         10 * time.Second,
		Wait:        3 * time.Second,
		Hold:        time.Millisecond,
	}
}

// Validate reports the first setting that is out of bounds, or a URL that
// is not on a loopback address unless AllowRemote.
func (c LoadConfig) Validate() error {
	switch c.Scenario {
	case AcquireRelease, Contended, UserLock, Waiting:
	default:
		return fmt.Errorf("--scenario %q: want acquire-release, contended, user-lock or waiting", c.Scenario)
	}
	if c.Wait < 0 || c.Wait%time.Millisecond != 0 || c.Hold < 0 || c.Hold > c.TTL/2 {
		return fmt.Errorf("--wait-ms %v, --hold %v: want whole milliseconds of wait, and a hold of at most half of --ttl", c.Wait, c.Hold)
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		return fmt.Errorf("--duration %v: want more than 0 and at most %v", c.Duration, MaxDuration)
	}
	if c.Requests < 0 {
		return errors.New("--requests must not be negative")
	}
	if c.Concurrency < 1 || c.Concurrency > MaxLoadConcurrency {
		return fmt.Errorf("--concurrency %d: want 1 to %d", c.Concurrency, MaxLoadConcurrency)
	}
	if c.Resources < 0 || c.Resources > MaxResources {
		return fmt.Errorf("--resources %d: want 0 to %d", c.Resources, MaxResources)
	}
	if c.TTL < time.Second || c.TTL%time.Second != 0 {
		return fmt.Errorf("--ttl %v must be a whole number of seconds, at least 1s", c.TTL)
	}
	if !c.AllowRemote {
		// A shared or production gateway is not a test target.
		for _, u := range strings.Split(c.URL, ",") {
			if err := checkLoopback("--url", u, "http", "https"); err != nil {
				return fmt.Errorf("refusing to load: %w; load runs only against a gateway on this machine, pass --allow-remote to load another one on purpose", err)
			}
		}
	}
	return nil
}

// resources is Resources with its default applied.
func (c LoadConfig) resources() int {
	switch {
	case c.Resources > 0:
		return c.Resources
	case c.Scenario == Contended:
		return 1
	case c.Scenario == Waiting:
		return 4
	}
	return c.Concurrency
}

// Operations timed by the load run.
type operation int

const (
	opAcquire operation = iota
	opRelease
	opUserLock
	opStatus
	numOps
)

var opNames = [numOps]string{"acquire", "release", "user-lock", "status"}

func (o operation) String() string { return opNames[o] }

// workerStats is one worker's tally; merged after the run, so no locking.
type workerStats struct {
	hist      [numOps]histogram
	successes int64
	errs      map[string]int64
	acquired  int64
	contended int64
	// user-lock outcomes
	ulAcquired, ulRepeated, ulFlagged int64
}

// answer records one request's outcome: ok when the gateway gave a
// definite success answer, else err is classified by status and slug.
func (w *workerStats) answer(o operation, d time.Duration, err error) {
	w.hist[o].record(d)
	if err == nil {
		w.successes++
		return
	}
	w.errs[errorKind(err)]++
}

// errorKind names an error for the report: "503 unavailable", or
// "transport" when there was no answer.
func errorKind(err error) string {
	var ce *client.Error
	if errors.As(err, &ce) {
		return strconv.Itoa(ce.Status) + " " + ce.Slug()
	}
	if errors.Is(err, client.ErrValidation) {
		return "client validation"
	}
	return "transport"
}

type run struct {
	cfg     LoadConfig
	c       []*client.Client // by URL; worker i uses c[i mod len(c)]
	runID   string
	budget  *budget
	tracker *fenceTracker
}

// Load validates cfg, runs the workers until cfg.Duration passes, the
// request budget is spent or ctx ends, then sums up. Requests in flight
// at the end are let finish, so a won lease is always released. The only
// error is an invalid cfg; failed requests and fencing violations are
// counted in the report.
func Load(ctx context.Context, cfg LoadConfig) (*LoadReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Resources = cfg.resources()

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	hc := keepAliveClient(cfg.Concurrency, requestTimeout)
	defer hc.CloseIdleConnections()
	opts := []client.Option{client.WithHTTPClient(hc), client.WithRetryPolicy(client.RetryPolicy{Attempts: 1})}
	if cfg.APIKey != "" {
		opts = append(opts, client.WithAPIKey(cfg.APIKey))
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	r := &run{
		cfg:     cfg,
		c:       clients(cfg.URL, opts),
		runID:   "load-" + hex.EncodeToString(id[:]),
		budget:  newBudget(runCtx, cfg.Requests),
		tracker: newFenceTracker(),
	}

	stats := make([]*workerStats, cfg.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range stats {
		stats[i] = &workerStats{errs: map[string]int64{}}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if cfg.Scenario == UserLock {
				r.userLockWorker(i, stats[i])
			} else {
				r.lockWorker(i, stats[i])
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)

	stoppedBy := "duration"
	switch {
	case cfg.Requests > 0 && r.budget.spent():
		stoppedBy = "requests"
	case ctx.Err() != nil:
		stoppedBy = "interrupted"
	}
	return r.summarize(stats, elapsed, stoppedBy), nil
}

func clients(urls string, opts []client.Option) []*client.Client {
	var cs []*client.Client
	for _, u := range strings.Split(urls, ",") {
		cs = append(cs, client.New(u, opts...))
	}
	return cs
}

// resource names the i-th resource (or user id) of this run; the run id
// keeps runs apart, so a rerun never meets an earlier run's leases.
func (r *run) resource(i int) string { return r.runID + "-" + strconv.Itoa(i) }

// lockWorker runs acquire+release iterations (acquire-release and
// contended). Requests outlive the run's deadline: a won lease is always
// released.
func (r *run) lockWorker(w int, st *workerStats) {
	reqCtx := context.Background()
	c := r.c[w%len(r.c)]
	for seq := 0; ; seq++ {
		n := r.budget.take(2)
		if n == 0 {
			return
		}
		res := r.resource(w % r.cfg.Resources)
		if r.cfg.Scenario != AcquireRelease {
			res = r.resource(mrand.IntN(r.cfg.Resources))
		}
		if n == 1 {
			// One request left and no acquire+release pair fits: spend
			// it on a status read, which leaves nothing behind.
			t0 := time.Now()
			_, err := c.Status(reqCtx, res)
			if errors.Is(err, client.ErrNotFound) {
				err = nil
			}
			st.answer(opStatus, time.Since(t0), err)
			r.budget.done(0)
			continue
		}
		owner := r.runID + "-w" + strconv.Itoa(w) + "-" + strconv.Itoa(seq)
		opts := []client.AcquireOption{client.WithOwner(owner)}
		if r.cfg.Scenario == Waiting {
			owner = r.runID + "-w" + strconv.Itoa(w)
			opts = []client.AcquireOption{client.WithOwner(owner), client.WithWait(r.cfg.Wait)}
		}
		sent := time.Now()
		lease, err := c.Acquire(reqCtx, res, r.cfg.TTL, opts...)
		var na *client.NotAcquiredError
		if errors.As(err, &na) {
			st.answer(opAcquire, time.Since(sent), nil)
			st.contended++
			r.budget.done(1)
			continue
		}
		st.answer(opAcquire, time.Since(sent), err)
		if err != nil {
			r.budget.done(1)
			continue
		}
		st.acquired++
		r.tracker.grant(res, owner, lease.Token, sent, r.cfg.TTL)
		if r.cfg.Scenario == Waiting {
			time.Sleep(r.cfg.Hold)
		}
		// The holder stops believing it holds the lock before it asks
		// for the release, as a careful client stops writing first.
		r.tracker.drop(res, owner)
		t0 := time.Now()
		err = c.Release(reqCtx, lease)
		st.answer(opRelease, time.Since(t0), err)
		r.budget.done(0)
	}
}

// userLockWorker sends user-lock attempts, cycling through the user ids.
func (r *run) userLockWorker(w int, st *workerStats) {
	reqCtx := context.Background()
	c := r.c[w%len(r.c)]
	name := r.runID
	for seq := 0; ; seq++ {
		if r.budget.take(1) == 0 {
			return
		}
		user := "u" + strconv.Itoa((w+seq*r.cfg.Concurrency)%r.cfg.Resources)
		t0 := time.Now()
		ul, err := c.UserLock(reqCtx, name, user, r.cfg.TTL)
		st.answer(opUserLock, time.Since(t0), err)
		if err == nil {
			if ul.Acquired {
				st.ulAcquired++
			} else {
				st.ulRepeated++
			}
			if ul.Flagged {
				st.ulFlagged++
			}
		}
		r.budget.done(0)
	}
}
