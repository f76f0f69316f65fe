// Package redistest starts throwaway redis-server processes for tests.
//
// Each server runs on a free loopback port in its own temporary directory
// and is stopped by t.Cleanup. Beside a single server (Start) there are a
// TLS-only server with a CA made in the test (NewCA, StartTLS), a Redis
// Cluster made with redis-cli --cluster create (masters only:
// StartCluster, AddReplica; three masters with a replica each, quick to
// fail over: StartFailoverCluster, WaitPromoted), and a primary + replica + three Sentinels with a forced
// failover (StartSentinel, Failover). Tests never touch the shared Redis on 6379
// and never FLUSHALL. When redis-server is not installed the test is
// skipped, except under CI=true, where that is a failure.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/tooltest"
)

// Server is one redis-server process owned by a test.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string
	// lead goes before the generated arguments (a config file and
	// --sentinel for a Sentinel).
	lead []string
	// tls: the port is the TLS port and the plain port is off.
	tls bool
	// readyLine is the log line that says the server is up (default
	// "Ready to accept connections"; Sentinel never prints that).
	readyLine string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been reaped
}

// Binary returns the path of redis-server, skipping the test when it is
// missing (failing it under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	return lookBinary(t, "redis-server")
}

func lookBinary(t testing.TB, name string) string {
	t.Helper()
	return tooltest.Look(t, "Debian's redis-server package", name)
}

// Start starts a redis-server with no persistence unless args ask for it
// (e.g. "--appendonly", "yes"). Extra args are passed as they are.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, bin: Binary(t), dir: t.TempDir(), args: args}
	s.startOnFreePort()
	t.Cleanup(s.Stop)
	return s
}

// startOnFreePort starts the server on a port FreePort picks. That port
// is free when FreePort answers, not when redis-server binds it: with
// tests in parallel another may take it in between, so a start that
// finds it taken tries another port, up to three in all.
func (s *Server) startOnFreePort() {
	s.t.Helper()
	for try := 1; ; try++ {
		s.port = FreePort(s.t)
		if s.startOnce(try < 3) {
			return
		}
	}
}

// Eventually polls cond every millisecond until it holds, and fails the
// test with what if it does not within the bound. Only for state that
// sends no signal a test could wait on (a queue's length, a subscription
// being confirmed); the bound guards a hang, so keep it generous.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, time.Now().Add(within), time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return fmt.Errorf("%s: not true after %v", what, within)
	})
}

// poll calls check every interval until it returns nil, and fails the
// test with check's last error once deadline has passed: the one bounded
// poll of this package (Eventually, and the fixtures' waits for a
// cluster, a replica or a Sentinel).
func poll(t testing.TB, deadline time.Time, interval time.Duration, check func() error) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(interval)
	}
}

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port was
// free a moment ago: for a server a test starts, or one nobody listens on.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(FreePort(t))
}

// DeadAddr is a loopback address where nothing serves, for the test's
// life: a listener there closes every connection as it comes, as a dead
// Redis (or gateway) would reset it. Unlike FreeAddr's port, which a test
// running in parallel may bind the moment it is free, it cannot start
// answering halfway through the test.
func DeadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("dead address: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// handedOut holds every port FreePort returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback TCP port that was free a moment ago and
// that it has not returned before in this process. A port is never
// handed out twice because a test's server can outlive its use: a
// Sentinel still watches a primary a test killed, a gateway still dials
// a Redis it waits for, and a new server on that port would get their
// commands (a Sentinel's REPLICAOF turns it into another test's replica).
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

func (s *Server) start() {
	s.t.Helper()
	s.startOnce(false)
}

// startOnce starts redis-server on s.port and waits until it is ready.
// With portMayBeTaken, a server that exits because the port is in use is
// reported as false instead of failing the test.
func (s *Server) startOnce(portMayBeTaken bool) bool {
	s.t.Helper()
	args := append([]string(nil), s.lead...)
	if s.tls {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(s.port))
	} else {
		args = append(args, "--port", strconv.Itoa(s.port))
	}
	args = append(args,
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--logfile", "",
	)
	args = append(args, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatalf("redis-server pipe: %v", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	ready := make(chan struct{})
	readyText := s.readyLine
	if readyText == "" {
		readyText = "Ready to accept connections"
	}
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(out)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			log.WriteString(line + "\n")
			logMu.Unlock()
			if !signalled && strings.Contains(line, readyText) {
				signalled = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	reaped := make(chan struct{})
	go func() {
		err := cmd.Wait()
		close(reaped)
		exited <- err
	}()
	select {
	case <-ready:
	case err := <-exited:
		logMu.Lock()
		defer logMu.Unlock()
		if portMayBeTaken && strings.Contains(log.String(), "Address already in use") {
			return false
		}
		s.t.Fatalf("redis-server exited before it was ready (%v):\n%s", err, log.String())
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		s.t.Fatalf("redis-server not ready after 20s")
	}
	s.mu.Lock()
	s.cmd = cmd
	s.exited = reaped
	s.mu.Unlock()
	return true
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// addrs are host:port of each of servers.
func addrs(servers []*Server) []string {
	var a []string
	for _, s := range servers {
		a = append(a, s.Addr())
	}
	return a
}

// URL is the server's redis:// URL (rediss:// for StartTLS).
func (s *Server) URL() string {
	if s.tls {
		return "rediss://" + s.Addr()
	}
	return "redis://" + s.Addr()
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Dir is the server's working directory (where AOF/RDB files go).
func (s *Server) Dir() string { return s.dir }

// Client returns a new client for the server, closed at cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping %s: %v", s.Addr(), err)
	}
	return c
}

// Stop shuts the server down (SHUTDOWN NOSAVE is not used: with AOF on,
// everything fsynced stays). It is safe to call twice.
func (s *Server) Stop() {
	cmd, done := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT) // in case it was Paused
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) take() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd, done := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	return cmd, done
}

// Kill ends the server at once with SIGKILL, as a crash would.
func (s *Server) Kill() {
	cmd, done := s.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// running: the server was started and not stopped or killed since.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Pause freezes the server (SIGSTOP): it keeps its connections but answers
// nothing, as a hung or partitioned node would. Resume undoes it; Stop and
// Kill work on a paused server.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("%s: not running", s)
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("%s: signal %v: %v", s, sig, err)
	}
}

// Restart stops the server and starts it again on the same port and
// directory, so persisted data (AOF) is loaded back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// String names the server in test output.
func (s *Server) String() string { return fmt.Sprintf("redis-server@%s", s.Addr()) }
