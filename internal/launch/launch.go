// Package launch starts the processes that run on loopback beside a test
// or a measurement: redis-server (StartRedis), a Redis Cluster of such
// servers (FormCluster) and `leasegate serve` (BuildGateway,
// StartGateway). It returns errors; internal/redistest and
// internal/gatewaytest wrap it for tests (failing the test on an error),
// and the maintainers' tooling (tools/bench) calls it directly.
package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Sentinels of the package.
var (
	// ErrExited: the process exited before it was ready.
	ErrExited = errors.New("launch: exited before it was ready")
	// ErrPortTaken: redis-server exited because its port was in use.
	ErrPortTaken = errors.New("launch: port already in use")
	// ErrNoGo: BuildGateway found no go on PATH.
	ErrNoGo = errors.New("launch: go not on PATH")
)

// handedOut holds every port FreePort returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback TCP port that was free a moment ago and
// that it has not returned before in this process. A port is never
// handed out twice because a server can outlive its use: a Sentinel
// still watches a primary a test killed, a gateway still dials a Redis
// it waits for, and a new server on that port would get their commands.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("launch: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
}

// Poll calls ready every interval until it returns nil. It gives up with
// ErrExited when exited is closed (nil: never), with ctx's error when
// ctx ends, and with ready's last error once limit has passed.
func Poll(ctx context.Context, exited <-chan struct{}, limit, interval time.Duration, ready func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", limit, err)
		}
		select {
		case <-exited:
			return ErrExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// cleanEnv is this process's environment without LEASEGATE_* (API
// keys, say): a launched gateway runs on its own flags only.
func cleanEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEASEGATE_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// Tail keeps the last Max bytes written to it: a child's stderr.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

// String is what was kept, "(empty)" when nothing was.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "(empty)"
	}
	return s
}

// Reset forgets what was kept.
func (t *Tail) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = nil
}
