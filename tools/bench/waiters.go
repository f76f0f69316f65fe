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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/launch"
	"github.com/leasegate/leasegate/server"
)

// The waiters measurement (-waiters N): how much memory a gateway needs
// per waiting acquire. The gateway runs as a `leasegate serve` process of
// its own (Config.GatewayCommand), so that its RSS is its alone; one
// resource is held, N raw TCP connections each send a waiting acquire of
// it, and once the gateway's waiters gauge counts N the
// gateway's VmRSS and VmHWM (/proc/PID/status) and its Go runtime gauges
// (/metrics) are read. Then the holder releases and every waiter, granted
// in turn, releases at once; every one of them must end granted.

// waitersWait is the wait_ms of each waiting acquire: the setup of
// MaxWaiters connections and the hand-offs after it fit in it.
const waitersWait = 2 * time.Minute

// waitersSetup bounds the time until every waiter waits, and
// waitersDrain the hand-offs after the release.
const (
	waitersSetup = 2 * time.Minute
	waitersDrain = 3 * time.Minute
)

// WaitersReport is what -waiters measured. Byte counts are bytes.
type WaitersReport struct {
	Waiters int `json:"waiters"`
	// NoFile is this process's open-files limit (RLIMIT_NOFILE, raised to
	// its hard limit), GatewayNoFile the gateway's ("Max open files").
	NoFile        uint64   `json:"nofile_limit"`
	GatewayNoFile string   `json:"gateway_nofile_limit"`
	GatewayArgs   []string `json:"gateway_args"`

	// Before: the gateway after start-up and the holder's acquire; At:
	// with every waiter parked; After: once every waiter has ended.
	Before GatewayMemory `json:"before"`
	At     GatewayMemory `json:"at"`
	After  GatewayMemory `json:"after"`

	// Per waiter: (At - Before) / Waiters.
	RSSPerWaiter        float64 `json:"rss_bytes_per_waiter"`
	HeapPerWaiter       float64 `json:"heap_inuse_bytes_per_waiter"`
	StackPerWaiter      float64 `json:"stack_inuse_bytes_per_waiter"`
	GoroutinesPerWaiter float64 `json:"goroutines_per_waiter"`

	// SetupSeconds: from the first connection to the gauge reading N.
	// DrainSeconds: from the holder's release to the last waiter's end.
	SetupSeconds float64 `json:"setup_seconds"`
	DrainSeconds float64 `json:"drain_seconds"`
	Granted      int64   `json:"granted"`
	TimedOut     int64   `json:"timed_out"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
}

// GatewayMemory is one reading of the gateway process.
type GatewayMemory struct {
	RSS        int64   `json:"vm_rss_bytes"`
	HWM        int64   `json:"vm_hwm_bytes"`
	HeapInuse  float64 `json:"go_heap_inuse_bytes"`
	StackInuse float64 `json:"go_stack_inuse_bytes"`
	Goroutines float64 `json:"go_goroutines"`
	// Waiters is the leasegate_lock_waiters gauge.
	Waiters float64 `json:"lock_waiters"`
}

// runWaiters runs the measurement on the Redis at redisURL.
func runWaiters(ctx context.Context, cfg Config, redisURL, runID string) (_ *WaitersReport, err error) {
	n := cfg.Waiters
	nofile, err := raiseNoFile(uint64(n) + 256)
	if err != nil {
		return nil, err
	}
	rep := &WaitersReport{Waiters: n, NoFile: nofile}
	gp, err := startGateway(ctx, cfg, []string{"--redis-url", redisURL}, n)
	if err != nil {
		return nil, err
	}
	defer stopGateway(gp)
	rep.GatewayArgs = append([]string{"serve", "--addr", gp.Spec.Addr}, gp.Spec.Args...)
	rep.GatewayNoFile = noFileLimit(gp)

	resource := "bench-" + runID + "-waiters"
	lockURL := gp.URL() + "/locks/" + resource
	hc := &http.Client{Timeout: time.Minute}
	defer hc.CloseIdleConnections()
	call := func(method, url string, body []byte, want int) ([]byte, error) {
		data, err := bench.DoJSON(ctx, hc, method, url, body, want)
		if err != nil {
			return nil, fmt.Errorf("bench: waiters: %w", err)
		}
		return data, nil
	}
	// metrics reads the gateway's /metrics gauges into m.
	metrics := func(m *GatewayMemory) error {
		body, err := call(http.MethodGet, gp.URL()+"/metrics", nil, http.StatusOK)
		if err != nil {
			return err
		}
		m.fromMetrics(body)
		return nil
	}
	read := func() (GatewayMemory, error) {
		m, err := procMemory(gp)
		if err != nil {
			return m, err
		}
		err = metrics(&m)
		return m, err
	}

	holder := []byte(`{"owner":"bench-holder","ttl_seconds":` + strconv.Itoa(int(waitersDrain/time.Second)) + `}`)
	if body, err := call(http.MethodPost, lockURL, holder, http.StatusOK); err != nil {
		return nil, err
	} else if !bench.Granted(body) {
		return nil, fmt.Errorf("bench: waiters: the holder's acquire was not granted: %s", body)
	}
	if rep.Before, err = read(); err != nil {
		return nil, err
	}

	// The waiters, each on a connection of its own.
	ws := &waiterSet{addr: gp.Spec.Addr, path: "/locks/" + resource, n: n}
	defer func() {
		if err != nil {
			ws.abort()
		}
	}()
	start := time.Now()
	ws.open(ctx)
	waiting := func() (int, error) {
		var m GatewayMemory
		err := metrics(&m)
		return int(m.Waiters), err
	}
	// The gateway's leasegate_lock_waiters gauge is the signal: it counts
	// the requests inside their waiting acquire. (GET /locks's "waiters"
	// counts those registered in Redis, which are the queues' heads.)
	deadline := time.Now().Add(waitersSetup)
	for {
		got, err := waiting()
		if err != nil {
			return nil, err
		}
		if got == n {
			break
		}
		if e := ws.failed(); e != nil {
			return nil, fmt.Errorf("bench: waiters: %d of %d waiting, and a waiter failed: %w", got, n, e)
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			why := "time is up"
			if err := errors.Join(ctx.Err(), gp.Exited()); err != nil {
				why = err.Error()
			}
			return nil, fmt.Errorf("bench: waiters: %d of %d waiting after %v: %s", got, n, time.Since(start).Round(time.Millisecond), why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	rep.SetupSeconds = time.Since(start).Seconds()
	if rep.At, err = read(); err != nil {
		return nil, err
	}

	// Release: the waiters are granted one after the other, each
	// releasing as soon as it is granted.
	drain := time.Now()
	if _, err := call(http.MethodDelete, lockURL, []byte(`{"owner":"bench-holder"}`), http.StatusNoContent); err != nil {
		return nil, err
	}
	if !ws.wait(waitersDrain) {
		return nil, fmt.Errorf("bench: waiters: not every waiter ended within %v of the release (%d granted)", waitersDrain, ws.granted.Load())
	}
	rep.DrainSeconds = time.Since(drain).Seconds()
	rep.Granted, rep.TimedOut, rep.Errors = ws.granted.Load(), ws.timedOut.Load(), ws.errors.Load()
	if e := ws.failed(); e != nil {
		rep.FirstError = e.Error()
	}
	if rep.After, err = read(); err != nil {
		return nil, err
	}
	if _, err := call(http.MethodGet, lockURL, nil, http.StatusNotFound); err != nil {
		return nil, fmt.Errorf("bench: waiters: the resource is still held after the drain: %w", err)
	}

	f := float64(n)
	rep.RSSPerWaiter = float64(rep.At.RSS-rep.Before.RSS) / f
	rep.HeapPerWaiter = (rep.At.HeapInuse - rep.Before.HeapInuse) / f
	rep.StackPerWaiter = (rep.At.StackInuse - rep.Before.StackInuse) / f
	rep.GoroutinesPerWaiter = (rep.At.Goroutines - rep.Before.Goroutines) / f
	return rep, nil
}

// waiterSet is the N waiting clients: raw HTTP/1.1 over a connection
// each (a net/http client would cost the driver two goroutines and two
// buffers per connection).
type waiterSet struct {
	addr, path string
	n          int
	from       int // the owners are bench-waiter-{from..from+n-1}

	wg                        sync.WaitGroup
	granted, timedOut, errors atomic.Int64
	mu                        sync.Mutex
	first                     error
	conns                     []net.Conn
	aborted                   bool
}

// open dials the n connections (16 at a time) and sends each one's
// waiting acquire; a goroutine per connection reads the answer.
func (ws *waiterSet) open(ctx context.Context) {
	idx := make(chan int)
	var dialers sync.WaitGroup
	for range 16 {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			d := net.Dialer{Timeout: 10 * time.Second}
			for i := range idx {
				conn, err := d.DialContext(ctx, "tcp", ws.addr)
				if err != nil {
					ws.fail(fmt.Errorf("dial %s: %w", ws.addr, err))
					continue
				}
				if !ws.add(conn) {
					_ = conn.Close()
					continue
				}
				ws.wg.Add(1)
				go ws.run(conn, "bench-waiter-"+strconv.Itoa(ws.from+i))
			}
		}()
	}
	for i := range ws.n {
		idx <- i
	}
	close(idx)
	dialers.Wait()
}

func (ws *waiterSet) add(c net.Conn) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.aborted {
		return false
	}
	ws.conns = append(ws.conns, c)
	return true
}

// run is one waiter: the waiting acquire, then, when granted, the
// release on the same connection.
func (ws *waiterSet) run(conn net.Conn, owner string) {
	defer ws.wg.Done()
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(waitersWait + waitersDrain))
	br := bufio.NewReaderSize(conn, 1024)
	acquire := `{"owner":"` + owner + `","ttl_seconds":60,"wait_ms":` + strconv.FormatInt(waitersWait.Milliseconds(), 10) + `}`
	status, body, err := roundTrip(conn, br, http.MethodPost, ws.path, acquire)
	switch {
	case err != nil:
		ws.fail(err)
		return
	case status != http.StatusOK:
		ws.fail(fmt.Errorf("waiting acquire: got %d %s", status, body))
		return
	case !bench.Granted(body):
		ws.timedOut.Add(1)
		return
	}
	status, body, err = roundTrip(conn, br, http.MethodDelete, ws.path, `{"owner":"`+owner+`"}`)
	switch {
	case err != nil:
		ws.fail(err)
	case status != http.StatusNoContent:
		ws.fail(fmt.Errorf("release: got %d %s", status, body))
	default:
		ws.granted.Add(1)
	}
}

// roundTrip sends one request on conn and reads its answer.
func roundTrip(conn net.Conn, br *bufio.Reader, method, path, body string) (int, []byte, error) {
	req := method + " " + path + " HTTP/1.1\r\nHost: " + conn.RemoteAddr().String() + "\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return resp.StatusCode, data, err
}

func (ws *waiterSet) fail(err error) {
	ws.errors.Add(1)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.first == nil && !ws.aborted {
		ws.first = err
	}
}

func (ws *waiterSet) failed() error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.first
}

// wait waits up to d for every waiter to end.
func (ws *waiterSet) wait(d time.Duration) bool {
	done := make(chan struct{})
	go func() { ws.wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// abort closes every connection (their waits are cancelled) and waits
// for the waiters to end.
func (ws *waiterSet) abort() {
	ws.mu.Lock()
	ws.aborted = true
	conns := ws.conns
	ws.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	ws.wg.Wait()
}

// startGateway starts `leasegate serve` (cfg.GatewayCommand) on a free
// loopback port, on the Redis that redisArgs name (its --redis-* flags),
// able to hold n waiters, and waits until it is ready.
func startGateway(ctx context.Context, cfg Config, redisArgs []string, n int) (*launch.Gateway, error) {
	// No drain: nothing balances over these gateways.
	args := append(slices.Clone(redisArgs), "--log-level", cfg.GatewayLogLevel, "--drain-delay", "0",
		"--max-wait", waitersWait.String(), "--write-timeout", (waitersWait + time.Minute).String())
	if n > server.DefaultMaxWaiters {
		args = append(args, "--max-waiters", strconv.Itoa(n))
	}
	gp, err := launch.StartGateway(ctx, launch.GatewaySpec{Bin: cfg.GatewayCommand, Args: args, Env: cfg.GatewayEnv, Stdout: cfg.GatewayLog})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return gp, nil
}

// stopGateway ends the gateway with SIGTERM (a graceful stop), SIGKILL
// after 30 s.
func stopGateway(gp *launch.Gateway) { _ = gp.Stop(syscall.SIGTERM, 30*time.Second) }

// procMemory reads VmRSS and VmHWM from /proc/PID/status.
func procMemory(gp *launch.Gateway) (GatewayMemory, error) {
	var m GatewayMemory
	data, err := os.ReadFile("/proc/" + strconv.Itoa(gp.Pid()) + "/status")
	if err != nil {
		return m, fmt.Errorf("bench: waiters: the gateway's RSS (Linux /proc only): %w", err)
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return m, fmt.Errorf("bench: waiters: /proc status %s: %w", line, err)
		}
		if k == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.HWM = kb << 10
		}
	}
	return m, nil
}

// noFileLimit is the gateway's "Max open files" soft limit.
func noFileLimit(gp *launch.Gateway) string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(gp.Pid()) + "/limits")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				return f[0]
			}
		}
	}
	return "unknown"
}

// raiseNoFile raises this process's open-files soft limit to its hard
// limit (the Go runtime usually has already) and returns it; an error
// when it stays below need.
func raiseNoFile(need uint64) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("bench: RLIMIT_NOFILE: %w", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, fmt.Errorf("bench: raise RLIMIT_NOFILE to %d: %w", rl.Max, err)
		}
	}
	if rl.Cur < need {
		return rl.Cur, fmt.Errorf("bench: waiters: %d open files needed, the limit is %d (raise the hard limit: ulimit -Hn)", need, rl.Cur)
	}
	return rl.Cur, nil
}

// fromMetrics reads the Go runtime gauges and the waiters gauge from a
// Prometheus text exposition.
func (m *GatewayMemory) fromMetrics(body []byte) {
	for line := range strings.Lines(string(body)) {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_goroutines":
			m.Goroutines = f
		case "go_memstats_heap_inuse_bytes":
			m.HeapInuse = f
		case "go_memstats_stack_inuse_bytes":
			m.StackInuse = f
		case "leasegate_lock_waiters":
			m.Waiters = f
		}
	}
}

// printWaiters writes the waiters measurement.
func (r *Report) printWaiters(w io.Writer) {
	wr := r.Waiters
	mib := func(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }
	fmt.Fprintf(w, "bench -waiters %d: a `leasegate serve` process holding %d waiting acquires of one held resource\n", wr.Waiters, wr.Waiters)
	fmt.Fprintf(w, "%s, GOMAXPROCS=%d, %d CPUs, redis-server %s; open files: driver %d, gateway %s\n",
		r.GoVersion, r.GOMAXPROCS, r.NumCPU, r.RedisVersion, wr.NoFile, wr.GatewayNoFile)
	fmt.Fprintf(w, "gateway: leasegate %s\n\n", strings.Join(wr.GatewayArgs, " "))
	tw := newTable(w)
	fmt.Fprintln(tw, "gateway\tVmRSS\tVmHWM\theap inuse\tstack inuse\tgoroutines\twaiters\t")
	for _, row := range []struct {
		name string
		m    GatewayMemory
	}{{"before", wr.Before}, {"with every waiter", wr.At}, {"after", wr.After}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t\n", row.name, mib(float64(row.m.RSS)), mib(float64(row.m.HWM)),
			mib(row.m.HeapInuse), mib(row.m.StackInuse), row.m.Goroutines, row.m.Waiters)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nper waiter: %.1f KiB RSS, %.1f KiB heap, %.1f KiB stacks, %.2f goroutines\n",
		wr.RSSPerWaiter/1024, wr.HeapPerWaiter/1024, wr.StackPerWaiter/1024, wr.GoroutinesPerWaiter)
	fmt.Fprintf(w, "setup %.2f s (connections opened until the gateway's gauge reads %d waiters); drain %.2f s (%.0f hand-offs/s)\n",
		wr.SetupSeconds, wr.Waiters, wr.DrainSeconds, float64(wr.Granted)/max(wr.DrainSeconds, 1e-9))
	fmt.Fprintf(w, "waiters granted then released: %d; timed out: %d; errors: %d\n", wr.Granted, wr.TimedOut, wr.Errors)
	if wr.FirstError != "" {
		fmt.Fprintln(w, "first error:", wr.FirstError)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
}
