package gatewaytest

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/redistest"
)

// The gateway binary, built once per test process.
var binary struct {
	once sync.Once
	dir  string
	err  error
}

// Binary builds cmd/leasegate once per test process (go build, the
// module's own source) and returns the path; RemoveBinary, from
// TestMain, deletes it.
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "leasegate-bin-"); binary.err != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binary.dir, "leasegate"),
			"github.com/leasegate/leasegate/cmd/leasegate").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatalf("build the gateway: %v", binary.err)
	}
	return filepath.Join(binary.dir, "leasegate")
}

// RemoveBinary deletes what Binary built; call it from TestMain.
func RemoveBinary() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}

// Process is `leasegate serve` run as a process of its own on Addr, so
// that a test can signal it (a rolling restart) and start it again.
type Process struct {
	Addr string
	t    testing.TB
	bin  string
	args []string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit, once exited is closed
	stderr bytes.Buffer
}

// StartProcess runs `leasegate serve --addr` (a free loopback port) with
// args, waits until its /readyz answers 200, and kills it at cleanup if
// it still runs.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	p := &Process{Addr: redistest.FreeAddr(t), t: t, bin: Binary(t), args: args}
	t.Cleanup(func() {
		if p.cmd != nil {
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	p.Start()
	return p
}

// Start runs the process again on the same address (after Stop) and
// waits until it is ready.
func (p *Process) Start() {
	t := p.t
	t.Helper()
	cmd := exec.Command(p.bin, append([]string{"serve", "--addr", p.Addr}, p.args...)...)
	p.stderr.Reset()
	cmd.Stderr = &p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start leasegate serve: %v", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { p.err = cmd.Wait(); close(done) }(p.exited)
	hc := &http.Client{Timeout: time.Second}
	redistest.Eventually(t, 20*time.Second, "leasegate on "+p.Addr+" answers /readyz", func() bool {
		select {
		case <-p.exited:
			t.Fatalf("leasegate on %s exited before it was ready (%v): %s", p.Addr, p.err, p.stderr.String())
		default:
		}
		res, err := hc.Get("http://" + p.Addr + "/readyz")
		if err != nil {
			time.Sleep(10 * time.Millisecond) // not a busy loop while it starts
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// Stop sends sig (SIGTERM: a graceful stop) and waits up to within for
// the exit, which must be status 0.
func (p *Process) Stop(sig syscall.Signal, within time.Duration) {
	t := p.t
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal leasegate on %s: %v", p.Addr, err)
	}
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("leasegate on %s still running %v after %v", p.Addr, within, sig)
	}
	p.cmd = nil
	if p.err != nil {
		t.Errorf("leasegate on %s: exit %v, want 0: %s", p.Addr, p.err, p.stderr.String())
	}
}
