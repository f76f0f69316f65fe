// Package gatewaytest runs a real leasegate gateway (server.New and Serve
// on a free loopback port) for the tests of other packages: the Go
// client, the CLI subcommands, the PHP client, the load generator,
// benchmarks. The public leasegatetest, the same gateway for the tests
// of a service that uses leasegate, is built on Start and Maintain. It also runs fakes that break the contract on purpose
// (StartTokenReuser), to prove a check catches them.
package gatewaytest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate/server"
)

// Start builds a gateway from cfg with log (nil: none) on a free loopback
// port (cfg.Addr is replaced: tests never share a fixed port), or on the
// Unix socket a cfg.Addr of unix:/path names (URL is then that address),
// serves it, and at cleanup shuts it down gracefully, failing the test if
// the shutdown or Serve reports an error.
func Start(t testing.TB, cfg server.Config, log *zap.Logger) *server.Server {
	t.Helper()
	if !strings.HasPrefix(cfg.Addr, "unix:") {
		cfg.Addr = "127.0.0.1:0"
	}
	s, err := server.New(cfg, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		// Two requests at once can leave a connection the client dialed
		// for one of them unused, when the other's freed connection served
		// it. Shutdown counts such a connection as busy until
		// ReadHeaderTimeout closes it, 5 s later; the tests' clients use
		// the default transport, so closing its idle connections ends it.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("gateway shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("gateway serve: %v", err)
		}
	})
	return s
}

// URL is the gateway's base URL.
func URL(s *server.Server) string {
	if a := s.Addr(); strings.HasPrefix(a, "unix:") {
		return a // the base URL of a Unix socket (client.New, the PHP client)
	}
	return "http://" + s.Addr()
}

// Maintain runs s's periodic work (server.Server.Maintain: the lock index
// sweeps that count expiries and held locks, the activity samples), which
// server.Run does beside Serve, until the test ends.
func Maintain(t testing.TB, s *server.Server) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Maintain(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
}
