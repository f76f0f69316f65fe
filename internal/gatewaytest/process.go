package gatewaytest

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/launch"
)

// Process is `leasegate serve` run as a process of its own on Addr
// (launch.Gateway), so that a test can signal it (a rolling restart) and
// start it again.
type Process struct {
	Addr string
	t    testing.TB
	g    *launch.Gateway
}

// StartProcess runs `leasegate serve --addr` (a free loopback port) with
// args, waits until its /readyz answers 200, and kills it at cleanup if
// it still runs.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	g, err := launch.StartGateway(context.Background(), launch.GatewaySpec{Bin: Binary(t), Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Kill)
	return &Process{Addr: g.Spec.Addr, t: t, g: g}
}

// Start runs the process again on the same address (after Stop) and
// waits until it is ready.
func (p *Process) Start() {
	p.t.Helper()
	if err := p.g.Start(context.Background()); err != nil {
		p.t.Fatal(err)
	}
}

// Stop sends sig (SIGTERM: a graceful stop) and waits up to within for
// the exit, which must be status 0.
func (p *Process) Stop(sig syscall.Signal, within time.Duration) {
	p.t.Helper()
	err := p.g.Stop(sig, within)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		p.t.Error(err)
	case err != nil:
		p.t.Fatal(err)
	}
}
