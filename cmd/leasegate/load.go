package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/leasegate/leasegate/client"
)

// Limits of `leasegate load`: a load run is bounded and stops by itself.
const (
	maxLoadDuration    = 5 * time.Minute
	maxLoadConcurrency = 1024
	maxLoadResources   = 1 << 20
	// loadRequestTimeout bounds one request; requests in flight when the
	// run ends are allowed to finish (a won lease is always released).
	loadRequestTimeout = 30 * time.Second
	// maxViolationsShown is how many fencing violations are described;
	// all are counted.
	maxViolationsShown = 10
)

// Load scenarios (docs/benchmarks.md).
const (
	scenarioAcquireRelease = "acquire-release"
	scenarioContended      = "contended"
	scenarioUserLock       = "user-lock"
)

type loadFlags struct {
	url         string
	apiKey      string
	duration    time.Duration
	requests    int
	concurrency int
	resources   int
	scenario    string
	ttl         time.Duration
	json        bool
	allowRemote bool
}

const loadUsage = `Usage: leasegate load [flags]

Drives a running gateway with a bounded load and prints a summary:
requests, errors by status and problem type, throughput, latency
percentiles per operation, acquired and contended counts, and a fencing
check (no two owners ever believed they held the same resource; each new
holder's token is above the previous one's).

Scenarios:
  acquire-release  each worker acquires a lock and releases it, over and over
                   (worker i uses resource i mod --resources)
  contended        every attempt picks one of --resources at random with a
                   fresh owner: many owners on few resources
  user-lock        POST /user-locks attempts on --resources user ids

The run stops after --duration, or after exactly --requests requests,
whichever comes first. Only loopback gateways are loaded unless
--allow-remote. Exit status: 0; 1 on fencing violations or when no request
succeeded; 2 usage.

Flags:
`

func cmdLoad(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	var f loadFlags
	fs := loadFlagSet(&f)
	fs.Usage = func() {
		fmt.Fprint(stderr, loadUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := f.validate(); err != nil {
		return usageError{err}
	}
	if !f.allowRemote {
		if err := checkLoopbackURL(f.url); err != nil {
			return usageError{err}
		}
	}

	sum := runLoad(ctx, f)
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return err
		}
	} else {
		sum.print(stdout)
	}
	switch {
	case sum.Fencing != nil && sum.Fencing.Violations > 0:
		return exitError{code: 1, msg: fmt.Sprintf("%d fencing violations: two owners believed they held the same resource, or a token did not increase", sum.Fencing.Violations)}
	case sum.Requests > 0 && sum.Successes == 0:
		return exitError{code: 1, msg: "no request succeeded"}
	}
	return nil
}

// loadFlagSet binds the flags of `leasegate load` to f, with their
// defaults (docs/configuration.md lists them; a test keeps the two equal).
func loadFlagSet(f *loadFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("leasegate load", flag.ContinueOnError)
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "gateway base URL (loopback only unless --allow-remote)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (sent as Authorization: Bearer)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long to run, at most "+maxLoadDuration.String())
	fs.IntVar(&f.requests, "requests", 0, "stop after exactly this many requests (0: run for --duration)")
	fs.IntVar(&f.concurrency, "concurrency", 8, "workers sending requests at the same time")
	fs.IntVar(&f.resources, "resources", 0, "distinct resource names (user ids for user-lock); 1: all workers contend on one lock (0: one per worker, 1 for contended)")
	fs.StringVar(&f.scenario, "scenario", scenarioAcquireRelease, "acquire-release, contended or user-lock")
	fs.DurationVar(&f.ttl, "ttl", 10*time.Second, "lease (or user-lock window) time, whole seconds")
	fs.BoolVar(&f.json, "json", false, "print the summary as JSON")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a gateway that is not on a loopback address")
	return fs
}

func (f *loadFlags) validate() error {
	switch f.scenario {
	case scenarioAcquireRelease, scenarioContended, scenarioUserLock:
	default:
		return fmt.Errorf("--scenario %q: want acquire-release, contended or user-lock", f.scenario)
	}
	if f.duration <= 0 || f.duration > maxLoadDuration {
		return fmt.Errorf("--duration %v: want more than 0 and at most %v", f.duration, maxLoadDuration)
	}
	if f.requests < 0 {
		return errors.New("--requests must not be negative")
	}
	if f.concurrency < 1 || f.concurrency > maxLoadConcurrency {
		return fmt.Errorf("--concurrency %d: want 1 to %d", f.concurrency, maxLoadConcurrency)
	}
	if f.resources < 0 || f.resources > maxLoadResources {
		return fmt.Errorf("--resources %d: want 0 to %d", f.resources, maxLoadResources)
	}
	if f.resources == 0 {
		f.resources = f.concurrency
		if f.scenario == scenarioContended {
			f.resources = 1
		}
	}
	if f.ttl < time.Second || f.ttl%time.Second != 0 {
		return fmt.Errorf("--ttl %v must be a whole number of seconds, at least 1s", f.ttl)
	}
	return nil
}

// checkLoopbackURL refuses a gateway that is not on this machine: a load
// run is meant for loopback only (a shared or production gateway is not a
// test target). Host names other than localhost are not resolved: they
// are refused.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("--url %q: want an http:// or https:// URL", raw)
	}
	host := u.Hostname()
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to load %q: host %q is not a loopback address (127.0.0.0/8, ::1, localhost); load runs only against a gateway on this machine, pass --allow-remote to load another one on purpose", raw, host)
}

// Operations timed by the load run.
type loadOp int

const (
	opAcquire loadOp = iota
	opRelease
	opUserLock
	opStatus
	numOps
)

func (o loadOp) String() string {
	switch o {
	case opAcquire:
		return "acquire"
	case opRelease:
		return "release"
	case opUserLock:
		return "user-lock"
	case opStatus:
		return "status"
	}
	return "op" + strconv.Itoa(int(o))
}

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
func (w *workerStats) answer(op loadOp, d time.Duration, err error) {
	w.hist[op].record(d)
	if err == nil {
		w.successes++
		return
	}
	w.errs[errorKind(err)]++
}

// errorKind names an error for the summary: "503 unavailable", or
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

type loadRun struct {
	f       loadFlags
	c       *client.Client
	runID   string
	budget  *budget
	tracker *fenceTracker
}

// runLoad runs the workers until the duration passes, the request budget
// is spent or ctx ends, then sums up.
func runLoad(ctx context.Context, f loadFlags) *loadSummary {
	runCtx, cancel := context.WithTimeout(ctx, f.duration)
	defer cancel()

	hc := &http.Client{
		Timeout: loadRequestTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        f.concurrency,
			MaxIdleConnsPerHost: f.concurrency,
			IdleConnTimeout:     30 * time.Second,
		},
	}
	defer hc.CloseIdleConnections()
	opts := []client.Option{client.WithHTTPClient(hc), client.WithRetryPolicy(client.RetryPolicy{Attempts: 1})}
	if f.apiKey != "" {
		opts = append(opts, client.WithAPIKey(f.apiKey))
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	r := &loadRun{
		f:       f,
		c:       client.New(f.url, opts...),
		runID:   "load-" + hex.EncodeToString(id[:]),
		budget:  newBudget(runCtx, f.requests),
		tracker: newFenceTracker(),
	}

	stats := make([]*workerStats, f.concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range stats {
		stats[i] = &workerStats{errs: map[string]int64{}}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if f.scenario == scenarioUserLock {
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
	case f.requests > 0 && r.budget.spent():
		stoppedBy = "requests"
	case ctx.Err() != nil:
		stoppedBy = "interrupted"
	}
	return r.summarize(stats, elapsed, stoppedBy)
}

// resource names the i-th resource (or user id) of this run; the run id
// keeps runs apart, so a rerun never meets an earlier run's leases.
func (r *loadRun) resource(i int) string { return r.runID + "-" + strconv.Itoa(i) }

// lockWorker runs acquire+release iterations (acquire-release and
// contended). Requests outlive the run's deadline: a won lease is always
// released.
func (r *loadRun) lockWorker(w int, st *workerStats) {
	reqCtx := context.Background()
	for seq := 0; ; seq++ {
		n := r.budget.take(2)
		if n == 0 {
			return
		}
		res := r.resource(w % r.f.resources)
		if r.f.scenario == scenarioContended {
			res = r.resource(mrand.IntN(r.f.resources))
		}
		if n == 1 {
			// One request left and no acquire+release pair fits: spend
			// it on a status read, which leaves nothing behind.
			t0 := time.Now()
			_, err := r.c.Status(reqCtx, res)
			if errors.Is(err, client.ErrNotFound) {
				err = nil
			}
			st.answer(opStatus, time.Since(t0), err)
			r.budget.done(0)
			continue
		}
		owner := r.runID + "-w" + strconv.Itoa(w) + "-" + strconv.Itoa(seq)
		sent := time.Now()
		lease, err := r.c.Acquire(reqCtx, res, r.f.ttl, client.WithOwner(owner))
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
		r.tracker.grant(res, owner, lease.Token, sent, r.f.ttl)
		// The holder stops believing it holds the lock before it asks
		// for the release, as a careful client stops writing first.
		r.tracker.drop(res, owner)
		t0 := time.Now()
		err = r.c.Release(reqCtx, lease)
		st.answer(opRelease, time.Since(t0), err)
		r.budget.done(0)
	}
}

// userLockWorker sends user-lock attempts, cycling through the user ids.
func (r *loadRun) userLockWorker(w int, st *workerStats) {
	reqCtx := context.Background()
	name := r.runID
	for seq := 0; ; seq++ {
		if r.budget.take(1) == 0 {
			return
		}
		user := "u" + strconv.Itoa((w+seq*r.f.concurrency)%r.f.resources)
		t0 := time.Now()
		ul, err := r.c.UserLock(reqCtx, name, user, r.f.ttl)
		st.answer(opUserLock, time.Since(t0), err)
		if err == nil {
			switch {
			case ul.Acquired:
				st.ulAcquired++
			default:
				st.ulRepeated++
			}
			if ul.Flagged {
				st.ulFlagged++
			}
		}
		r.budget.done(0)
	}
}

// budget hands out request slots. Unlimited (n = 0) it only stops at the
// deadline. Limited, a worker takes the slots of a whole iteration (2 for
// acquire+release) up front and gives back what it did not use, so the
// total is exactly n: when one slot is left and nothing is in flight that
// could give one back, the worker gets that single slot.
type budget struct {
	ctx     context.Context
	limited bool

	mu       sync.Mutex
	cond     *sync.Cond
	left     int
	inflight int
}

func newBudget(ctx context.Context, n int) *budget {
	b := &budget{ctx: ctx, limited: n > 0, left: n}
	b.cond = sync.NewCond(&b.mu)
	if b.limited {
		// Wake the waiters when the run ends.
		go func() {
			<-ctx.Done()
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		}()
	}
	return b
}

// take returns how many slots the caller may use: want, 1 (the last slot
// of a limited budget), or 0 to stop.
func (b *budget) take(want int) int {
	if !b.limited {
		if b.ctx.Err() != nil {
			return 0
		}
		return want
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch {
		case b.ctx.Err() != nil || b.left == 0:
			return 0
		case b.left >= want:
			b.left -= want
			b.inflight++
			return want
		case b.inflight == 0:
			n := b.left
			b.left = 0
			b.inflight++
			return n
		}
		b.cond.Wait()
	}
}

// done ends an iteration that used fewer slots than it took.
func (b *budget) done(unused int) {
	if !b.limited {
		return
	}
	b.mu.Lock()
	b.left += unused
	b.inflight--
	b.cond.Broadcast()
	b.mu.Unlock()
}

// spent reports whether a limited budget was used up.
func (b *budget) spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limited && b.left == 0
}

// fenceTracker is the client-side consistency check: it keeps, per
// resource, who believes they hold it (from the grant until they ask for
// the release, or until their lease ends by the local clock) and the last
// token granted. A grant while another owner still believes it holds the
// resource, or a token not above the previous holder's, is a violation.
type fenceTracker struct {
	mu         sync.Mutex
	res        map[string]*fenceState
	grants     int64
	violations int64
	shown      []string
}

type fenceState struct {
	owner     string // "" when nobody believes they hold it
	token     int64
	until     time.Time // the holder's lease end by the local clock
	seen      bool
	lastToken int64
	lastOwner string
}

func newFenceTracker() *fenceTracker { return &fenceTracker{res: map[string]*fenceState{}} }

// grant records that owner got res with token; sent is when its acquire
// was sent, so sent+ttl is the earliest the gateway may give res to
// someone else without a release.
func (t *fenceTracker) grant(res, owner string, token int64, sent time.Time, ttl time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.grants++
	s := t.res[res]
	if s == nil {
		s = &fenceState{}
		t.res[res] = s
	}
	if s.owner != "" && now.Before(s.until) {
		t.violate(fmt.Sprintf("%s: %s was granted token %d while %s still held token %d (its lease had %v left)",
			res, owner, token, s.owner, s.token, s.until.Sub(now).Round(time.Millisecond)))
	}
	if s.seen && token <= s.lastToken {
		t.violate(fmt.Sprintf("%s: %s was granted token %d, not above %d granted before to %s",
			res, owner, token, s.lastToken, s.lastOwner))
	}
	s.owner, s.token, s.until = owner, token, sent.Add(ttl)
	s.seen, s.lastToken, s.lastOwner = true, token, owner
}

// drop ends owner's belief that it holds res.
func (t *fenceTracker) drop(res, owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.res[res]; s != nil && s.owner == owner {
		s.owner = ""
	}
}

func (t *fenceTracker) violate(msg string) {
	t.violations++
	if len(t.shown) < maxViolationsShown {
		t.shown = append(t.shown, msg)
	}
}

// histogram is a log-linear latency histogram (HDR-like): values below
// 64 ns are exact, above that each power of two is split into 64
// buckets, so a reported percentile is within 1/64 (1.6 %) above the
// true value. The maximum is kept exactly.
type histogram struct {
	counts []int64
	n      int64
	max    time.Duration
	sum    time.Duration
}

const histSubBits = 6
const histSub = 1 << histSubBits

func histBucket(v int64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - histSubBits
	return (shift+1)*histSub + int((v>>shift)&(histSub-1))
}

// histUpper is the largest value of bucket b.
func histUpper(b int) int64 {
	if b < histSub {
		return int64(b)
	}
	shift := b/histSub - 1
	low := int64(histSub+b%histSub) << shift
	return low + (int64(1) << shift) - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	b := histBucket(int64(d))
	if b >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, b+1-len(h.counts))...)
	}
	h.counts[b]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]int64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the value at quantile q (0 < q <= 1): the upper bound
// of the bucket holding the ceil(q*n)-th smallest sample, at most max.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histUpper(b)), h.max)
		}
	}
	return h.max
}

// loadSummary is what a run prints (--json: this, as JSON).
type loadSummary struct {
	Scenario    string  `json:"scenario"`
	URL         string  `json:"url"`
	Concurrency int     `json:"concurrency"`
	Resources   int     `json:"resources"`
	TTLSeconds  int64   `json:"ttl_seconds"`
	StoppedBy   string  `json:"stopped_by"`
	ElapsedSec  float64 `json:"elapsed_seconds"`

	Requests   int64            `json:"requests"`
	Successes  int64            `json:"successes"`
	Errors     int64            `json:"errors"`
	ErrorKinds map[string]int64 `json:"errors_by_kind"`
	Throughput float64          `json:"throughput_rps"`

	Operations map[string]opSummary `json:"operations"`

	Acquired  int64 `json:"acquired,omitempty"`
	Contended int64 `json:"contended,omitempty"`

	UserLocks *userLockSummary `json:"user_locks,omitempty"`
	Fencing   *fenceSummary    `json:"fencing,omitempty"`
}

type opSummary struct {
	Count  int64   `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
}

type userLockSummary struct {
	Acquired int64 `json:"acquired"`
	Repeated int64 `json:"repeated"`
	Flagged  int64 `json:"flagged_answers"`
}

type fenceSummary struct {
	Grants     int64    `json:"grants"`
	Violations int64    `json:"violations"`
	Examples   []string `json:"examples,omitempty"`
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (r *loadRun) summarize(stats []*workerStats, elapsed time.Duration, stoppedBy string) *loadSummary {
	s := &loadSummary{
		Scenario: r.f.scenario, URL: r.f.url, Concurrency: r.f.concurrency,
		Resources: r.f.resources, TTLSeconds: int64(r.f.ttl / time.Second),
		StoppedBy: stoppedBy, ElapsedSec: elapsed.Seconds(),
		ErrorKinds: map[string]int64{}, Operations: map[string]opSummary{},
	}
	var hists [numOps]histogram
	var ul userLockSummary
	for _, w := range stats {
		for op := range hists {
			hists[op].merge(&w.hist[op])
		}
		s.Successes += w.successes
		for k, v := range w.errs {
			s.ErrorKinds[k] += v
			s.Errors += v
		}
		s.Acquired += w.acquired
		s.Contended += w.contended
		ul.Acquired += w.ulAcquired
		ul.Repeated += w.ulRepeated
		ul.Flagged += w.ulFlagged
	}
	s.Requests = s.Successes + s.Errors
	if elapsed > 0 {
		s.Throughput = float64(s.Requests) / elapsed.Seconds()
	}
	for op := loadOp(0); op < numOps; op++ {
		h := &hists[op]
		if h.n == 0 {
			continue
		}
		s.Operations[op.String()] = opSummary{
			Count:  h.n,
			MeanMS: ms(h.sum / time.Duration(h.n)),
			P50MS:  ms(h.quantile(0.50)),
			P90MS:  ms(h.quantile(0.90)),
			P99MS:  ms(h.quantile(0.99)),
			MaxMS:  ms(h.max),
		}
	}
	if r.f.scenario == scenarioUserLock {
		s.UserLocks = &ul
	} else {
		r.tracker.mu.Lock()
		s.Fencing = &fenceSummary{Grants: r.tracker.grants, Violations: r.tracker.violations, Examples: r.tracker.shown}
		r.tracker.mu.Unlock()
	}
	return s
}

func (s *loadSummary) print(w io.Writer) {
	fmt.Fprintf(w, "leasegate load: %s, %d workers, %d resources, ttl %ds, %s\n",
		s.Scenario, s.Concurrency, s.Resources, s.TTLSeconds, s.URL)
	fmt.Fprintf(w, "stopped by %s after %.2fs\n\n", s.StoppedBy, s.ElapsedSec)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "requests\t%d\t(successes %d, errors %d)\n", s.Requests, s.Successes, s.Errors)
	fmt.Fprintf(tw, "throughput\t%.1f req/s\t\n", s.Throughput)
	if s.UserLocks != nil {
		fmt.Fprintf(tw, "user locks\t%d acquired, %d repeated, %d flagged answers\t\n", s.UserLocks.Acquired, s.UserLocks.Repeated, s.UserLocks.Flagged)
	} else {
		fmt.Fprintf(tw, "acquired\t%d\t\n", s.Acquired)
		fmt.Fprintf(tw, "contended\t%d\t\n", s.Contended)
	}
	kinds := make([]string, 0, len(s.ErrorKinds))
	for k := range s.ErrorKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(tw, "error\t%d\t%s\n", s.ErrorKinds[k], k)
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "operation\tcount\tmean ms\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for op := loadOp(0); op < numOps; op++ {
		o, ok := s.Operations[op.String()]
		if !ok {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", op, o.Count, o.MeanMS, o.P50MS, o.P90MS, o.P99MS, o.MaxMS)
	}
	_ = tw.Flush()

	if f := s.Fencing; f != nil {
		fmt.Fprintf(w, "\nfencing check: %d violations in %d grants\n", f.Violations, f.Grants)
		for _, e := range f.Examples {
			fmt.Fprintln(w, "  violation:", e)
		}
	}
}
