package server

import (
	"fmt"
	"net"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// DefaultEmbeddedRedisAddr is where the embedded Redis listens unless
// --embedded-redis-addr says otherwise: loopback, on a free port (so two
// development gateways never collide); the start log names the port.
const DefaultEmbeddedRedisAddr = "127.0.0.1:0"

// startEmbedded runs the in-memory Redis (miniredis) on
// cfg.EmbeddedRedisAddr, which must be a loopback address, and logs how
// to reach it with redis-cli.
func (s *Server) startEmbedded() error {
	addr := s.cfg.EmbeddedRedisAddr
	if addr == "" {
		addr = DefaultEmbeddedRedisAddr
	}
	if !isLoopback(addr) {
		return fmt.Errorf("%w: embedded-redis-addr %q: the embedded Redis listens on a loopback address only (host:port, e.g. 127.0.0.1:6390)", ErrConfig, addr)
	}
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr(addr); err != nil {
		return fmt.Errorf("server: start embedded redis on %s: %w", addr, err)
	}
	s.mini = m
	s.stopEmbedded = make(chan struct{})
	s.clock = newStoreClock(m, s.cfg.EmbeddedRedisTestClock)
	go s.clock.run(s.stopEmbedded)
	s.rdb = redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: noRetries})
	s.log.Warn("no --redis-url given: using an embedded in-memory Redis; state is lost at exit and cannot be shared by several gateways (development only)",
		zap.String("embedded_redis", m.Addr()), zap.String("redis_cli", redisCLI(m.Addr())))
	return nil
}

// redisCLI is the redis-cli command line that reaches addr.
func redisCLI(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "redis-cli -u redis://" + addr
	}
	if host == "127.0.0.1" || host == "localhost" {
		return "redis-cli -p " + port
	}
	if strings.Contains(host, ":") {
		host = "'" + host + "'"
	}
	return "redis-cli -h " + host + " -p " + port
}
