package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/server"
)

// Gateway is a gateway built by server.New in this process on
// 127.0.0.1:0, driven over loopback HTTP with a keep-alive client.
type Gateway struct {
	srv    *server.Server
	served chan error
	hc     *http.Client
}

// StartGateway starts a gateway on the Redis at redisURL, with tp as its
// tracing (nil: off).
func StartGateway(redisURL string, cfg Config, tp trace.TracerProvider) (*Gateway, error) {
	log, err := gatewayLogger(cfg.GatewayLogLevel, cfg.GatewayLog)
	if err != nil {
		return nil, err
	}
	scfg := server.DefaultConfig()
	scfg.Addr = "127.0.0.1:0"
	scfg.RedisURL = redisURL
	scfg.AbuseLog = io.Discard
	scfg.Tracing = tp
	s, err := server.New(scfg, log)
	if err != nil {
		return nil, fmt.Errorf("bench: gateway: %w", err)
	}
	g := &Gateway{srv: s, served: make(chan error, 1)}
	go func() { g.served <- s.Serve() }()

	g.hc = keepAliveClient(cfg.Concurrency, time.Minute)
	return g, nil
}

// URL is the gateway's base URL.
func (g *Gateway) URL() string { return "http://" + g.srv.Addr() }

// Client is the keep-alive client the gateway's phases send with.
func (g *Gateway) Client() *http.Client { return g.hc }

// HTTPCycle is a cycle of two requests to a gateway, for worker i: POST
// URLs[i] with Acquires[i], which must be granted, then DELETE URLs[i]
// with Releases[i]. OnGrant and OnRelease, when set, are called after
// each granted acquire and each release (a hand-off's clock). Commands
// are those the gateway sends to Redis (nil: a script each way).
type HTTPCycle struct {
	Client             *http.Client
	Label              string
	URLs               []string
	Acquires, Releases [][]byte
	OnGrant, OnRelease func(i int)
	Commands           []string
}

// Cycle returns the phase named label: worker i's requests go to path+i,
// or all to path when shared; extra is more JSON fields of the acquire
// (",..." or "").
func (g *Gateway) Cycle(cfg Config, label, path string, shared bool, extra string) *HTTPCycle {
	return newHTTPCycle(g.hc, g.URL()+path, cfg, label, shared, extra)
}

// newHTTPCycle is Cycle on the gateway at base (its URL and path) with hc.
func newHTTPCycle(hc *http.Client, base string, cfg Config, label string, shared bool, extra string) *HTTPCycle {
	c := &HTTPCycle{Client: hc, Label: label}
	for i := range cfg.Concurrency {
		if shared {
			c.URLs = append(c.URLs, base)
		} else {
			c.URLs = append(c.URLs, base+strconv.Itoa(i))
		}
	}
	c.Acquires, c.Releases = OwnerBodies(cfg, extra)
	return c
}

func (c *HTTPCycle) Name() string { return c.Label }

// Sends are Commands, by default a script each way.
func (c *HTTPCycle) Sends() []string {
	if c.Commands != nil {
		return c.Commands
	}
	return []string{"evalsha", "eval"}
}

func (c *HTTPCycle) Acquire(ctx context.Context, i int) error {
	got, err := DoJSON(ctx, c.Client, http.MethodPost, c.URLs[i], c.Acquires[i], http.StatusOK)
	if err != nil {
		return err
	}
	if !Granted(got) {
		return fmt.Errorf("%s acquire: not granted: %s", c.Label, got)
	}
	if c.OnGrant != nil {
		c.OnGrant(i)
	}
	return nil
}

func (c *HTTPCycle) Release(ctx context.Context, i int) error {
	if _, err := DoJSON(ctx, c.Client, http.MethodDelete, c.URLs[i], c.Releases[i], http.StatusNoContent); err != nil {
		return err
	}
	if c.OnRelease != nil {
		c.OnRelease(i)
	}
	return nil
}

// keepAliveClient is the HTTP client of the drivers, Run's gateway phases
// and Load's workers alike: no proxy, one kept-alive connection per
// worker and gateway, each request bounded by timeout. The idle bound is
// per host only: a total bound of workers, with several gateways behind
// one client, made the transport close idle connections that requests
// were about to reuse ("putIdleConn: too many idle connections").
func keepAliveClient(workers int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: workers,
			IdleConnTimeout:     time.Minute,
		},
	}
}

// Owner is worker i's owner.
func Owner(i int) string { return "bench-owner-" + strconv.Itoa(i) }

// OwnerBodies are each worker's acquire body, {"owner":...,"ttl_seconds":
// cfg.TTL} with the JSON fields of extra (",..." or ""), and release
// body, {"owner":...}.
func OwnerBodies(cfg Config, extra string) (acquires, releases [][]byte) {
	ttl := strconv.FormatInt(int64(cfg.TTL/time.Second), 10)
	for i := range cfg.Concurrency {
		owner := Owner(i)
		acquires = append(acquires, []byte(`{"owner":"`+owner+`","ttl_seconds":`+ttl+extra+`}`))
		releases = append(releases, []byte(`{"owner":"`+owner+`"}`))
	}
	return acquires, releases
}

// gatewayLogger is `leasegate serve`'s logger (server.NewLogger) on w,
// io.Discard when w is nil.
func gatewayLogger(level string, w io.Writer) (*zap.Logger, error) {
	if w == nil {
		w = io.Discard
	}
	log, err := server.NewLogger(w, level)
	if err != nil {
		return nil, fmt.Errorf("bench: gateway log level: %w", err)
	}
	return log, nil
}

// Close stops the gateway.
func (g *Gateway) Close() {
	g.hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
	<-g.served
}

var granted = []byte(`"acquired":true`)

// Granted reports whether an acquire's answer says it was granted.
func Granted(body []byte) bool { return bytes.Contains(body, granted) }

// DoJSON sends one JSON request with hc and returns the answer's body
// (up to 1 MiB); an answer other than want is an error.
func DoJSON(ctx context.Context, hc *http.Client, method, url string, body []byte, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, errors.New(method + " " + req.URL.Path + ": got " + resp.Status + " " + string(data) + ", want " + strconv.Itoa(want))
	}
	return data, nil
}
