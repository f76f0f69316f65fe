package server

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// Reconnecting quickly after a Redis restart.
//
// go-redis's pool, once PoolSize dials have failed, fails every command at
// once and starts a probe that dials once, then sleeps a second, until a
// dial works (internal/pool tryDial). The second is not configurable, and
// neither MinRetryBackoff/MaxRetryBackoff (command retries, which the
// gateway turns off: noRetries) nor DialerRetries touch it: after a Redis
// restart the gateway went on answering 503 for up to a second more.
//
// redialer is the pool's Dialer instead: it keeps dialling every
// redialInterval until it connects or its context ends. The probe's
// context lasts the client's DialTimeout (dialWindow), so for that long
// after an outage begins the probe notices Redis back within
// redialInterval; only outages longer than that still see go-redis's
// one-second step, in 1 of every dialWindow+1 seconds. A request's dial
// ends with the request's context, as every Redis call does: during an
// outage the first requests take up to --request-timeout to be answered
// 503 (a shorter restart is absorbed), and once the pool fails fast the
// rest are answered at once.

// redialInterval is how often a failed dial is tried again.
const redialInterval = 25 * time.Millisecond

// minDialWindow is the least DialTimeout of a client that redials: how
// long go-redis's probe keeps dialling before its one-second pause.
const minDialWindow = 10 * time.Second

// keepAlive is go-redis's own TCP keep-alive policy (its default dialer's).
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}

// redialer returns a go-redis Dialer that dials addr every
// redialInterval until it connects or ctx ends, each TCP attempt bounded
// by attempt. With tc it then runs one TLS handshake: a certificate that
// does not verify is an answer, not an outage, and is not retried.
func redialer(tc *tls.Config, attempt time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{KeepAliveConfig: keepAlive}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var conn net.Conn
		for {
			actx, cancel := context.WithTimeout(ctx, attempt)
			c, err := d.DialContext(actx, network, addr)
			cancel()
			if err == nil {
				conn = c
				break
			}
			select {
			case <-ctx.Done():
				return nil, err
			case <-time.After(redialInterval):
			}
		}
		if tc == nil {
			return conn, nil
		}
		cfg := tc
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg = tc.Clone()
			cfg.ServerName = host
		}
		hctx, cancel := context.WithTimeout(ctx, attempt)
		defer cancel()
		t := tls.Client(conn, cfg)
		if err := t.HandshakeContext(hctx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return t, nil
	}
}
