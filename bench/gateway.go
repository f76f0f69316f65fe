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

// gateway is a gateway built by server.New in this process on
// 127.0.0.1:0, driven over loopback HTTP with a keep-alive client.
type gateway struct {
	srv    *server.Server
	served chan error
	hc     *http.Client
}

func startGateway(redisURL string, cfg Config) (*gateway, error) {
	return startTracedGateway(redisURL, cfg, nil)
}

// startTracedGateway is startGateway with tp as the gateway's tracing
// (nil: off).
func startTracedGateway(redisURL string, cfg Config, tp trace.TracerProvider) (*gateway, error) {
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
	g := &gateway{srv: s, served: make(chan error, 1)}
	go func() { g.served <- s.Serve() }()

	g.hc = keepAliveClient(cfg.Concurrency, time.Minute)
	return g, nil
}

// httpCycle is a cycle of two requests to the gateway, for worker i: POST
// urls[i] with acquires[i], which must be granted, then DELETE urls[i]
// with releases[i]. The gateway's lock phase, sem and handoff are such
// cycles; clock, handoff's alone, notes each grant and release.
type httpCycle struct {
	hc       *http.Client
	label    string
	urls     []string
	acquires [][]byte
	releases [][]byte
	clock    *handoffClock
}

// cycle returns the phase named label: worker i's requests go to path+i,
// or all to path when shared; extra is more JSON fields of the acquire
// (",..." or "").
func (g *gateway) cycle(cfg Config, label, path string, shared bool, extra string) *httpCycle {
	c := &httpCycle{hc: g.hc, label: label}
	base := "http://" + g.srv.Addr() + path
	for i := range cfg.Concurrency {
		if shared {
			c.urls = append(c.urls, base)
		} else {
			c.urls = append(c.urls, base+strconv.Itoa(i))
		}
	}
	c.acquires, c.releases = ownerBodies(cfg, extra)
	return c
}

func (c *httpCycle) name() string { return c.label }

// sends: each half of the cycle is one script.
func (c *httpCycle) sends() []string { return []string{"evalsha", "eval"} }

func (c *httpCycle) acquire(ctx context.Context, i int) error {
	got, err := doJSON(ctx, c.hc, http.MethodPost, c.urls[i], c.acquires[i], http.StatusOK)
	if err != nil {
		return err
	}
	if !bytes.Contains(got, granted) {
		return fmt.Errorf("%s acquire: not granted: %s", c.label, got)
	}
	if c.clock != nil {
		c.clock.granted(i)
	}
	return nil
}

func (c *httpCycle) release(ctx context.Context, i int) error {
	if _, err := doJSON(ctx, c.hc, http.MethodDelete, c.urls[i], c.releases[i], http.StatusNoContent); err != nil {
		return err
	}
	if c.clock != nil {
		c.clock.released(i)
	}
	return nil
}

// takeLatencies: a hand-off's latency is its clock's, nil for the others.
func (c *httpCycle) takeLatencies() *histogram { return c.clock.takeLatencies() }

// keepAliveClient is the HTTP client of the drivers, Run's gateway phases
// and Load's workers alike: no proxy, one kept-alive connection per
// worker and gateway, each request bounded by timeout. The idle bound is
// per host only: a total bound of workers, with several gateways behind
// one client (-capacity's fleets), made the transport close idle
// connections that requests were about to reuse ("putIdleConn: too many
// idle connections").
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

// benchOwner is worker i's owner.
func benchOwner(i int) string { return "bench-owner-" + strconv.Itoa(i) }

// ownerBodies are each worker's acquire body, {"owner":...,"ttl_seconds":
// cfg.TTL} with the JSON fields of extra (",..." or ""), and release
// body, {"owner":...}.
func ownerBodies(cfg Config, extra string) (acquires, releases [][]byte) {
	ttl := strconv.FormatInt(int64(cfg.TTL/time.Second), 10)
	for i := range cfg.Concurrency {
		owner := benchOwner(i)
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

func (g *gateway) close() {
	g.hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
	<-g.served
}

var granted = []byte(`"acquired":true`)

// doJSON sends one JSON request with hc and returns the answer's body
// (up to 1 MiB); an answer other than want is an error.
func doJSON(ctx context.Context, hc *http.Client, method, url string, body []byte, want int) ([]byte, error) {
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
