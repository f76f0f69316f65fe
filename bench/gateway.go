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
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/server"
)

// gateway is a gateway built by server.New in this process on
// 127.0.0.1:0, driven over loopback HTTP with a keep-alive client: one
// cycle is POST /locks/{r} then DELETE /locks/{r}.
type gateway struct {
	// label names the phase ("gateway", or a traced variant).
	label  string
	srv    *server.Server
	served chan error
	hc     *http.Client
	// Per worker: the lock URL and the two request bodies.
	urls     []string
	acquires [][]byte
	releases [][]byte
}

func startGateway(redisURL string, cfg Config, runID string) (*gateway, error) {
	return startGatewayAs("gateway", redisURL, cfg, runID, nil)
}

// startGatewayAs is startGateway for the phase called label, with tp as
// the gateway's tracing (nil: off).
func startGatewayAs(label, redisURL string, cfg Config, runID string, tp trace.TracerProvider) (*gateway, error) {
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
	g := &gateway{label: label, srv: s, served: make(chan error, 1)}
	go func() { g.served <- s.Serve() }()

	g.hc = keepAliveClient(cfg.Concurrency, time.Minute)
	g.urls = workerURLs("http://"+s.Addr()+"/locks/bench-"+runID+"-", cfg.Concurrency)
	g.acquires, g.releases = ownerBodies(cfg, "")
	return g, nil
}

// keepAliveClient is the HTTP client of the drivers, Run's gateway phases
// and Load's workers alike: no proxy, one kept-alive connection per
// worker, each request bounded by timeout.
func keepAliveClient(workers int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        workers,
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

// workerURLs are base followed by each worker's number.
func workerURLs(base string, n int) []string {
	urls := make([]string, n)
	for i := range urls {
		urls[i] = base + strconv.Itoa(i)
	}
	return urls
}

// gatewayLogger is `leasegate serve`'s logger (JSON lines at level) on w.
func gatewayLogger(level string, w io.Writer) (*zap.Logger, error) {
	var lvl zapcore.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("bench: gateway log level: %w", err)
	}
	if w == nil {
		w = io.Discard
	}
	enc := zap.NewProductionEncoderConfig()
	enc.TimeKey = "ts"
	enc.EncodeTime = zapcore.TimeEncoderOfLayout(time.RFC3339Nano)
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), lvl)), nil
}

func (g *gateway) name() string { return g.label }

// sends: the gateway's lock cycle is two scripts.
func (g *gateway) sends() []string { return []string{"evalsha", "eval"} }

func (g *gateway) close() {
	g.hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
	<-g.served
}

var granted = []byte(`"acquired":true`)

func (g *gateway) acquire(ctx context.Context, i int) error {
	return g.acquireAt(ctx, g.urls[i], g.acquires[i], "acquire")
}

// acquireAt POSTs an acquire (of a lock or a semaphore) to url; an answer
// other than 200 with "acquired":true is an error.
func (g *gateway) acquireAt(ctx context.Context, url string, body []byte, what string) error {
	got, err := g.do(ctx, http.MethodPost, url, body, http.StatusOK)
	if err != nil {
		return err
	}
	if !bytes.Contains(got, granted) {
		return fmt.Errorf("%s: not granted: %s", what, got)
	}
	return nil
}

func (g *gateway) release(ctx context.Context, i int) error {
	_, err := g.do(ctx, http.MethodDelete, g.urls[i], g.releases[i], http.StatusNoContent)
	return err
}

func (g *gateway) cycle(ctx context.Context, i int) error { return cycleOf(ctx, g, i) }

// do sends one request to the gateway and returns the answer's body; an
// answer other than want is an error.
func (g *gateway) do(ctx context.Context, method, url string, body []byte, want int) ([]byte, error) {
	return doJSON(ctx, g.hc, method, url, body, want)
}

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
