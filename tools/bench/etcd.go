package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/launch"
)

// The etcd phase (-etcd) measures etcd's own lock recipe,
// client/v3/concurrency.Mutex, with the program of the module bench/etcd
// (a module of its own, so this one does not depend on etcd). That program
// runs an embedded etcd server, or uses EtcdEndpoints, and answers one
// JSON line per phase asked for on its stdin. Each round, after the floor
// and the gateway, it runs:
//
//   - lock: each client locks and unlocks a mutex of its own (the
//     uncontended cycle, to set against the gateway's cycle);
//   - handoff: every client takes turns on one mutex (hand-offs/s and
//     release-to-next-holder latency).

// DefaultEtcdBench is where -etcd looks for the etcd
// program's module, relative to the working directory (this module's).
const DefaultEtcdBench = "etcd"

// EtcdResult is the etcd side of a run. Latencies are in milliseconds.
type EtcdResult struct {
	Version string `json:"etcd_version"`
	// Embedded: the program ran the server in its own process (data in a
	// temporary directory; Fsync: its WAL fsynced, etcd's default).
	Embedded  bool   `json:"embedded"`
	Fsync     bool   `json:"fsync"`
	Endpoints string `json:"endpoints"`
	GoVersion string `json:"go_version"`

	// Lock and Handoff are the medians over the rounds, field by field.
	// LockRatio is the median of each round's gateway cycles/s ÷ etcd lock
	// cycles/s; HandoffRatio the same of gateway hand-offs/s ÷ etcd's, 0
	// when this run measured no gateway hand-off.
	Lock         EtcdPhase   `json:"lock"`
	Handoff      EtcdPhase   `json:"handoff"`
	LockRatio    float64     `json:"lock_ratio"`
	HandoffRatio float64     `json:"handoff_ratio"`
	Rounds       []EtcdRound `json:"rounds"`
}

// EtcdRound is one round's etcd phases, with the ratios to the gateway
// phases of the same round.
type EtcdRound struct {
	Lock         EtcdPhase `json:"lock"`
	Handoff      EtcdPhase `json:"handoff"`
	LockRatio    float64   `json:"lock_ratio"`
	HandoffRatio float64   `json:"handoff_ratio"`
}

// EtcdPhase is one line of the etcd program's output (bench/etcd, type
// Result): Ops are cycles (lock) or hand-offs (handoff). For handoff, P50
// and P99 run from the holder's Unlock returning to the next holder's Lock
// returning (0 when the next holder had it first: Early counts those);
// CallP50/P99 from the Unlock call.
type EtcdPhase struct {
	Phase        string  `json:"phase"`
	Clients      int     `json:"clients"`
	Ops          int64   `json:"ops"`
	Errors       int64   `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
	Seconds      float64 `json:"seconds"`
	OpsPerSec    float64 `json:"ops_per_sec"`
	P50ms        float64 `json:"p50_ms"`
	P99ms        float64 `json:"p99_ms"`
	CallP50ms    float64 `json:"call_p50_ms,omitempty"`
	CallP99ms    float64 `json:"call_p99_ms,omitempty"`
	Early        int64   `json:"early,omitempty"`
	Violations   int64   `json:"violations"`
	ProcessCPUus float64 `json:"process_cpu_us_per_op"`
}

// etcdHello is the program's first line.
type etcdHello struct {
	EtcdVersion string `json:"etcd_version"`
	GoVersion   string `json:"go_version"`
	Embedded    bool   `json:"embedded"`
	Endpoints   string `json:"endpoints"`
	Fsync       bool   `json:"fsync"`
}

// etcdRunner is the running etcd program. A nil *etcdRunner is a skipped
// phase: its methods do nothing.
type etcdRunner struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *launch.Tail
	tmp    string
	res    *EtcdResult
}

// locateEtcdBench finds the etcd program: cfg.EtcdBench (a module
// directory or a built binary), else DefaultEtcdBench under the working
// directory. It returns the module directory or the binary, or a note
// saying why the phase is skipped.
func locateEtcdBench(given string) (dir, bin, note string) {
	path := given
	if path == "" {
		path = DefaultEtcdBench
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil && given == "":
		return "", "", "etcd phase skipped: no " + DefaultEtcdBench + " module under the working directory (run from tools/bench, or pass -etcd-bench DIR or BINARY)"
	case err != nil:
		return "", "", fmt.Sprintf("etcd phase skipped: -etcd-bench: %v", err)
	case !fi.IsDir():
		return "", path, ""
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err != nil {
		return "", "", fmt.Sprintf("etcd phase skipped: %s has no go.mod (want the bench/etcd module or a built binary)", path)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", "", fmt.Sprintf("etcd phase skipped: no go on PATH to build %s (pass a built binary as -etcd-bench)", path)
	}
	return path, "", ""
}

// startEtcd builds (from a module directory) and starts the etcd program
// and reads its first line into rep.Etcd; a skip adds a note to rep and
// returns nil, nil.
func startEtcd(ctx context.Context, cfg Config, rep *Report) (_ *etcdRunner, err error) {
	dir, bin, note := locateEtcdBench(cfg.EtcdBench)
	if note != "" {
		rep.Notes = append(rep.Notes, note)
		return nil, nil
	}
	r := &etcdRunner{stderr: &launch.Tail{Max: 4096}}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if dir != "" {
		if r.tmp, err = os.MkdirTemp("", "leasegate-bench-etcd-bin-"); err != nil {
			return nil, fmt.Errorf("bench: etcd: %w", err)
		}
		bin = filepath.Join(r.tmp, "etcd-bench")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Dir = dir
		// Its own go.mod and go.sum, never a go.work that would mix the
		// two modules.
		build.Env = append(os.Environ(), "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bench: etcd: go build in %s: %w\n%s", dir, err, out)
		}
	}
	args := []string{
		"-c", strconv.Itoa(cfg.Concurrency),
		"-duration", cfg.Duration.String(),
		"-warmup", cfg.Warmup.String(),
	}
	if cfg.EtcdEndpoints != "" {
		args = append(args, "-endpoints", cfg.EtcdEndpoints)
	}
	r.cmd = exec.CommandContext(ctx, bin, args...)
	r.cmd.Stderr = r.stderr
	if r.in, err = r.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("bench: etcd: %w", err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: etcd: %w", err)
	}
	r.out = bufio.NewScanner(stdout)
	if err := r.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: etcd: start %s: %w", bin, err)
	}
	line, err := r.readLine()
	if err != nil {
		return nil, err
	}
	var h etcdHello
	if err := json.Unmarshal(line, &h); err != nil || h.EtcdVersion == "" {
		return nil, fmt.Errorf("bench: etcd: first line is not the program's hello (%v): %q", err, line)
	}
	r.res = &EtcdResult{Version: h.EtcdVersion, Embedded: h.Embedded, Fsync: h.Fsync, Endpoints: h.Endpoints, GoVersion: h.GoVersion}
	rep.Etcd = r.res
	return r, nil
}

// round runs both etcd phases and records them with the ratios to the
// same round's gateway: gatewayCycles is its lock cycles/s,
// gatewayHandoffs its hand-offs/s (0: not measured in this run).
func (r *etcdRunner) round(gatewayCycles, gatewayHandoffs float64) error {
	if r == nil {
		return nil
	}
	var rd EtcdRound
	var err error
	if rd.Lock, err = r.phase("lock"); err != nil {
		return err
	}
	if rd.Handoff, err = r.phase("handoff"); err != nil {
		return err
	}
	if rd.Lock.OpsPerSec > 0 {
		rd.LockRatio = gatewayCycles / rd.Lock.OpsPerSec
	}
	if rd.Handoff.OpsPerSec > 0 {
		rd.HandoffRatio = gatewayHandoffs / rd.Handoff.OpsPerSec
	}
	r.res.Rounds = append(r.res.Rounds, rd)
	return nil
}

func (r *etcdRunner) phase(name string) (EtcdPhase, error) {
	if _, err := io.WriteString(r.in, name+"\n"); err != nil {
		return EtcdPhase{}, fmt.Errorf("bench: etcd: %w (stderr: %s)", err, r.stderr)
	}
	line, err := r.readLine()
	if err != nil {
		return EtcdPhase{}, err
	}
	return parseEtcdPhase(line, name)
}

func (r *etcdRunner) readLine() ([]byte, error) {
	if r.out.Scan() {
		return r.out.Bytes(), nil
	}
	err := r.out.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	// The program has ended or broken its output: let it finish writing
	// its stderr.
	_ = r.in.Close()
	_ = r.cmd.Wait()
	return nil, fmt.Errorf("bench: etcd: reading its output: %w (stderr: %s)", err, r.stderr)
}

// parseEtcdPhase decodes one result line of the etcd program, which must
// be the phase asked for.
func parseEtcdPhase(line []byte, want string) (EtcdPhase, error) {
	var p EtcdPhase
	if err := json.Unmarshal(line, &p); err != nil {
		return EtcdPhase{}, fmt.Errorf("bench: etcd: %s result: %w: %q", want, err, line)
	}
	if p.Phase != want {
		return EtcdPhase{}, fmt.Errorf("bench: etcd: got phase %q, want %q: %q", p.Phase, want, line)
	}
	if p.Ops < 0 || p.Seconds <= 0 {
		return EtcdPhase{}, fmt.Errorf("bench: etcd: %s result out of range: %q", want, line)
	}
	return p, nil
}

// close ends the program (the end of its stdin stops it) and removes the
// binary it was built into.
func (r *etcdRunner) close() {
	if r == nil {
		return
	}
	if r.cmd != nil && r.cmd.Process != nil {
		if r.in != nil {
			_ = r.in.Close()
		}
		done := make(chan struct{})
		go func() { _ = r.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = r.cmd.Process.Kill()
			<-done
		}
	}
	if r.tmp != "" {
		_ = os.RemoveAll(r.tmp)
	}
}

// summarize fills Lock, Handoff and the ratios from the rounds.
func (e *EtcdResult) summarize() {
	if e == nil || len(e.Rounds) == 0 {
		return
	}
	var locks, handoffs []EtcdPhase
	for _, rd := range e.Rounds {
		locks, handoffs = append(locks, rd.Lock), append(handoffs, rd.Handoff)
	}
	e.Lock, e.Handoff = medianEtcdPhase(locks), medianEtcdPhase(handoffs)
	e.LockRatio = bench.MedianBy(e.Rounds, func(rd EtcdRound) float64 { return rd.LockRatio })
	e.HandoffRatio = bench.MedianBy(e.Rounds, func(rd EtcdRound) float64 { return rd.HandoffRatio })
}

// medianEtcdPhase: rates, latencies and CPU are medians over ps; counts
// are summed.
func medianEtcdPhase(ps []EtcdPhase) EtcdPhase {
	m := func(f func(EtcdPhase) float64) float64 { return bench.MedianBy(ps, f) }
	out := EtcdPhase{
		Phase:        ps[0].Phase,
		Clients:      ps[0].Clients,
		Seconds:      m(func(p EtcdPhase) float64 { return p.Seconds }),
		OpsPerSec:    m(func(p EtcdPhase) float64 { return p.OpsPerSec }),
		P50ms:        m(func(p EtcdPhase) float64 { return p.P50ms }),
		P99ms:        m(func(p EtcdPhase) float64 { return p.P99ms }),
		CallP50ms:    m(func(p EtcdPhase) float64 { return p.CallP50ms }),
		CallP99ms:    m(func(p EtcdPhase) float64 { return p.CallP99ms }),
		ProcessCPUus: m(func(p EtcdPhase) float64 { return p.ProcessCPUus }),
	}
	for _, p := range ps {
		out.Ops += p.Ops
		out.Errors += p.Errors
		out.Early += p.Early
		out.Violations += p.Violations
		if out.FirstError == "" {
			out.FirstError = p.FirstError
		}
	}
	return out
}

// Failures are the etcd phases' errors and mutual-exclusion violations
// (0 for a nil result).
func (e *EtcdResult) Failures() int64 {
	if e == nil {
		return 0
	}
	var n int64
	for _, rd := range e.Rounds {
		n += rd.Lock.Errors + rd.Lock.Violations + rd.Handoff.Errors + rd.Handoff.Violations
	}
	return n
}

// print writes the etcd part of the text report.
func (e *EtcdResult) print(w io.Writer) {
	if e == nil || len(e.Rounds) == 0 {
		return
	}
	where := "at " + e.Endpoints
	if e.Embedded {
		where = "embedded in the etcd program, WAL not fsynced"
		if e.Fsync {
			where = "embedded in the etcd program, WAL fsynced"
		}
	}
	fmt.Fprintf(w, "\netcd %s (%s), concurrency.Mutex, same clients and times, median of %d round(s):\n", e.Version, where, len(e.Rounds))
	tw := newTable(w)
	fmt.Fprintln(tw, "phase\tops/s\tp50 ms\tp99 ms\tgateway/etcd\tproc cpu\terrors\t")
	ratio := func(x float64) string {
		if x == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", x)
	}
	for _, p := range []struct {
		name  string
		ph    EtcdPhase
		ratio float64
	}{{"etcd lock", e.Lock, e.LockRatio}, {"etcd handoff", e.Handoff, e.HandoffRatio}} {
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.2f\t%s\t%.1fµs\t%d\t\n",
			p.name, p.ph.OpsPerSec, p.ph.P50ms, p.ph.P99ms, ratio(p.ratio), p.ph.ProcessCPUus, p.ph.Errors+p.ph.Violations)
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "lock: ops = cycles (Lock+Unlock of a mutex per client, one shared session), p50/p99 of a cycle;")
	fmt.Fprintln(w, "handoff: ops = hand-offs (all clients on one mutex, a session each), p50/p99 from Unlock returning")
	fmt.Fprintf(w, "to the next Lock returning; from the Unlock call: p50 %.2f ms, p99 %.2f ms; %d of %d next holders\n",
		e.Handoff.CallP50ms, e.Handoff.CallP99ms, e.Handoff.Early, e.Handoff.Ops)
	fmt.Fprintln(w, "had the lock before the Unlock returned; proc cpu = the etcd program (driver, and the server when embedded)")
	if e.HandoffRatio == 0 {
		fmt.Fprintln(w, "handoff gateway/etcd: no gateway hand-off in this run, etcd's figures alone")
	}
	if len(e.Rounds) > 1 {
		fmt.Fprintln(w, "rounds (etcd lock cycles/s, gateway/etcd; etcd hand-offs/s, gateway/etcd):")
		for i, rd := range e.Rounds {
			fmt.Fprintf(w, "  %d: lock %.0f, %.3f; handoff %.0f, %s\n", i+1, rd.Lock.OpsPerSec, rd.LockRatio, rd.Handoff.OpsPerSec, ratio(rd.HandoffRatio))
		}
	}
	for _, p := range []EtcdPhase{e.Lock, e.Handoff} {
		if p.FirstError != "" {
			fmt.Fprintf(w, "etcd %s: first error: %s\n", p.Phase, p.FirstError)
		}
		if p.Violations > 0 {
			fmt.Fprintf(w, "etcd %s: %d times two clients held the mutex at once\n", p.Phase, p.Violations)
		}
	}
}
