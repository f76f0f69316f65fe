package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// BuildGateway builds cmd/leasegate into dir (with the race detector
// when race) with the go on PATH, from the working directory's module
// (the product's, or one that replaces it with a local copy), and
// returns the binary's path.
func BuildGateway(dir string, race bool) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoGo, err)
	}
	bin := filepath.Join(dir, "leasegate")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	out, err := exec.Command(goBin, append(args, "github.com/leasegate/leasegate/cmd/leasegate")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("launch: go build ./cmd/leasegate: %w\n%s", err, out)
	}
	return bin, nil
}

// GatewaySpec says how to run `leasegate serve`.
type GatewaySpec struct {
	Bin string
	// Addr to listen on; empty: a free loopback port.
	Addr string
	// Args follow `serve --addr Addr`.
	Args []string
	// Env is added to this process's environment, from which every
	// LEASEGATE_* is dropped: the gateway runs on its own settings only.
	Env []string
	// Stdout receives the access log (nil: discarded).
	Stdout io.Writer
}

// Gateway is a running `leasegate serve`.
type Gateway struct {
	Spec GatewaySpec
	// Stderr keeps the last 64 KiB of the process's stderr.
	Stderr *Tail

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the exit, once exited is closed
}

// StartGateway runs spec and waits until its /readyz answers 200.
func StartGateway(ctx context.Context, spec GatewaySpec) (*Gateway, error) {
	if spec.Addr == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		spec.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	g := &Gateway{Spec: spec, Stderr: &Tail{Max: 64 << 10}}
	return g, g.Start(ctx)
}

// Start runs the process again on the same address (after Stop) and
// waits until it is ready.
func (g *Gateway) Start(ctx context.Context) error {
	cmd := exec.Command(g.Spec.Bin, append([]string{"serve", "--addr", g.Spec.Addr}, g.Spec.Args...)...)
	cmd.Env = cleanEnv(g.Spec.Env)
	cmd.Stdout = g.Spec.Stdout
	g.Stderr.Reset()
	cmd.Stderr = g.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch: start %s serve: %w", g.Spec.Bin, err)
	}
	g.cmd, g.exited = cmd, make(chan struct{})
	go func(done chan struct{}) { g.err = cmd.Wait(); close(done) }(g.exited)
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	err := Poll(ctx, g.exited, 20*time.Second, 20*time.Millisecond, func() error {
		res, err := hc.Get(g.URL() + "/readyz")
		if err != nil {
			return err
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return errors.New("/readyz: " + res.Status)
		}
		return nil
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrExited):
		return fmt.Errorf("launch: leasegate on %s: %w: %w", g.Spec.Addr, err, g.Exited())
	}
	g.Kill()
	return fmt.Errorf("launch: leasegate on %s: %w", g.Spec.Addr, err)
}

// URL is the gateway's base URL.
func (g *Gateway) URL() string { return "http://" + g.Spec.Addr }

// Pid is the running process's id.
func (g *Gateway) Pid() int { return g.cmd.Process.Pid }

// Exited describes the process's end, nil while it runs.
func (g *Gateway) Exited() error {
	select {
	case <-g.exited:
		return fmt.Errorf("leasegate serve exited (%v): %s", g.err, g.Stderr)
	default:
		return nil
	}
}

// Stop sends sig (SIGTERM: a graceful stop) and waits up to within for
// the exit, which must be status 0; after within it kills the process.
func (g *Gateway) Stop(sig syscall.Signal, within time.Duration) error {
	if g.cmd == nil {
		return nil
	}
	defer func() { g.cmd = nil }()
	if err := g.cmd.Process.Signal(sig); err != nil {
		_ = g.cmd.Process.Kill()
		<-g.exited
		return fmt.Errorf("launch: signal leasegate on %s: %w", g.Spec.Addr, err)
	}
	select {
	case <-g.exited:
	case <-time.After(within):
		_ = g.cmd.Process.Kill()
		<-g.exited
		return fmt.Errorf("launch: leasegate on %s still running %v after %v", g.Spec.Addr, within, sig)
	}
	if g.err != nil {
		return fmt.Errorf("launch: leasegate on %s: exit %w, want 0: %s", g.Spec.Addr, g.err, g.Stderr)
	}
	return nil
}

// Kill ends the process at once, if it runs.
func (g *Gateway) Kill() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	<-g.exited
	g.cmd = nil
}
