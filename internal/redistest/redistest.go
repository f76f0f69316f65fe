// Package redistest starts throwaway redis-server processes for tests.
//
// Each server runs on a free loopback port in its own temporary directory
// and is stopped by t.Cleanup. Beside a single server (Start) there are a
// TLS-only server with a CA made in the test (NewCA, StartTLS), a Redis
// Cluster (masters only: StartCluster, AddReplica; three masters with a
// replica each, quick to fail over: StartFailoverCluster, WaitPromoted),
// and a primary + replica + three Sentinels with a forced failover
// (StartSentinel, Failover). Tests never touch the shared Redis on 6379
// and never FLUSHALL. When redis-server is not installed the test is
// skipped, except under CI=true, where that is a failure. The processes
// are started by internal/launch, which the measurement tooling uses too;
// this package turns its errors into test failures.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/launch"
	"github.com/leasegate/leasegate/internal/tooltest"
)

// Server is one redis-server process owned by a test (launch.Redis,
// whose errors fail the test).
type Server struct {
	t    testing.TB
	proc *launch.Redis
}

// newServer is a server of spec, not started yet.
func newServer(t testing.TB, spec launch.RedisSpec) *Server {
	return &Server{t: t, proc: &launch.Redis{Spec: spec}}
}

// Binary returns the path of redis-server, skipping the test when it is
// missing (failing it under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	return tooltest.Look(t, "Debian's redis-server package", "redis-server")
}

// Start starts a redis-server with no persistence unless args ask for it
// (e.g. "--appendonly", "yes"). Extra args are passed as they are.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := newServer(t, launch.RedisSpec{Bin: Binary(t), Dir: t.TempDir(), Args: args})
	s.startOnFreePort()
	t.Cleanup(s.Stop)
	return s
}

// startOnFreePort starts the server on a free port (launch.StartRedis
// tries another when a test running in parallel took the first).
func (s *Server) startOnFreePort() {
	s.t.Helper()
	p, err := launch.StartRedis(s.proc.Spec)
	if err != nil {
		s.t.Fatal(err)
	}
	s.proc = p
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

// FreePort returns a loopback TCP port that was free a moment ago and
// that it has not returned before in this process (launch.FreePort).
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func (s *Server) start() {
	s.t.Helper()
	if err := s.proc.Start(); err != nil {
		s.t.Fatal(err)
	}
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return s.proc.Addr() }

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
	if s.proc.Spec.TLS {
		return "rediss://" + s.Addr()
	}
	return "redis://" + s.Addr()
}

// Port is the server's TCP port.
func (s *Server) Port() int { return s.proc.Spec.Port }

// Dir is the server's working directory (where AOF/RDB files go).
func (s *Server) Dir() string { return s.proc.Spec.Dir }

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
func (s *Server) Stop() { s.proc.Stop() }

// Kill ends the server at once with SIGKILL, as a crash would.
func (s *Server) Kill() { s.proc.Kill() }

// running: the server was started and not stopped or killed since.
func (s *Server) running() bool { return s.proc.Running() }

// Pause freezes the server (SIGSTOP): it keeps its connections but answers
// nothing, as a hung or partitioned node would. Resume undoes it; Stop and
// Kill work on a paused server.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume lets a paused server run again (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.t.Helper()
	if err := s.proc.Signal(sig); err != nil {
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
