package server

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
)

// drain is the first step of a graceful stop (docs/deployment.md,
// "Rolling restarts"): for delay, /readyz answers 503 so that load
// balancers and Kubernetes take the gateway out of rotation, while calls
// are still served, each answer with Connection: close so that clients
// and balancers leave their keep-alive connections. Config.StopDraining
// ends the drain at once. Shutdown follows: it stops accepting and
// answers the waiters 503.
func (s *Server) drain(delay time.Duration) {
	s.draining.Store(true)
	if delay <= 0 {
		return
	}
	s.log.Info("draining: /readyz answers 503 while calls are still served; a second signal skips the rest",
		zap.Stringer("drain_delay", delay))
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.cfg.StopDraining:
		s.log.Info("told to stop at once (a second signal): the drain ends now")
	}
}

// ready is /readyz: not draining, and Redis ready (redisconn.Conn.Ready).
func (s *Server) ready(ctx context.Context) error {
	if s.draining.Load() {
		return errDraining
	}
	return s.conn.Ready(ctx)
}

// errDraining is /readyz's answer during the drain: expected, so not
// logged as a failure (leasegate.ErrorOf).
var errDraining = leasegate.Detailed(leasegate.ErrShuttingDown,
	"this gateway is shutting down (draining): send calls to another gateway", leasegate.DefaultRetryAfter)

// closeWhileDraining makes every answer given during the drain close its
// connection (net/http honours a handler's Connection: close).
func (s *Server) closeWhileDraining(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}
