package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/tracing"
)

// The caller's trace: the traceparent a traced client sends.
const (
	callerTrace     = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan      = "00f067aa0ba902b7"
	callerParent    = "00-" + callerTrace + "-" + callerSpan + "-01"
	tracedTestClass = "report:"
)

// tracedServer is a gateway on a real Redis whose spans a recorder keeps,
// sampled as tracing.SamplerFromEnv would with no OTEL_TRACES_SAMPLER.
func tracedServer(t *testing.T, mutate func(*server.Config)) (*httptest.Server, *tracetest.SpanRecorder, func() []map[string]any) {
	t.Helper()
	ts, rec, requests, _ := tracedServerOn(t, redistest.Start(t), mutate)
	return ts, rec, requests
}

// tracedServerOn is tracedServer on rs, which it also returns.
func tracedServerOn(t *testing.T, rs *redistest.Server, mutate func(*server.Config)) (*httptest.Server, *tracetest.SpanRecorder, func() []map[string]any, *redistest.Server) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithSampler(tracing.RequestsOnly(sdktrace.ParentBased(sdktrace.AlwaysSample()))),
	)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	log, lb := capture(t)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = rs.URL()
	cfg.KeyPrefix = "tracetest:"
	cfg.LockClasses = []string{tracedTestClass}
	cfg.Tracing = tp
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := server.New(cfg, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, rec, func() []map[string]any { return records(t, lb, "info", "request") }, rs
}

// post sends POST path with body and the caller's traceparent ("" for
// none) and returns the status.
func post(t *testing.T, url, body, traceparent string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	_ = res.Body.Close()
	return res.StatusCode
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAnAcquireIsTracedFromTheCallersTraceIntoRedis(t *testing.T) {
	t.Parallel()
	for _, pipelined := range []bool{true, false} {
		name := "one call of the Batcher's"
		if !pipelined {
			name = "without the Batcher"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts, rec, requests := tracedServer(t, func(c *server.Config) { c.NoAutoPipeline = !pipelined })
			if got := post(t, ts.URL+"/locks/report:2026-q4%2Fuser-42", `{"owner":"svc-a","ttl_seconds":30}`, callerParent); got != http.StatusOK {
				t.Fatalf("acquire: got %d, want 200", got)
			}

			var srv sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.SpanKind() == trace.SpanKindServer {
					srv = s
				}
			}
			if srv == nil {
				t.Fatalf("spans: got %d, none of them the request's server span", len(rec.Ended()))
			}
			if got := srv.SpanContext().TraceID().String(); got != callerTrace {
				t.Errorf("request span's trace id: got %s, want the caller's %s", got, callerTrace)
			}
			if got := srv.Parent().SpanID().String(); got != callerSpan || !srv.Parent().IsRemote() {
				t.Errorf("request span's parent: got %s (remote %v), want the caller's span %s", got, srv.Parent().IsRemote(), callerSpan)
			}
			if got, want := srv.Name(), "POST /locks/:resource"; got != want {
				t.Errorf("request span's name: got %q, want %q", got, want)
			}
			a := attrs(srv)
			for k, want := range map[attribute.Key]string{
				"http.route": "/locks/:resource", "http.request.method": "POST",
				"leasegate.tenant": "", "leasegate.lock_class": tracedTestClass,
			} {
				if v, ok := a[k]; !ok || v.String() != want {
					t.Errorf("request span's %s: got %q (set %v), want %q", k, v.String(), ok, want)
				}
			}
			if got := a["http.response.status_code"].AsInt64(); got != 200 {
				t.Errorf("request span's status: got %d, want 200", got)
			}
			for k, v := range a {
				if strings.Contains(v.String(), "user-42") || strings.Contains(v.String(), "svc-a") {
					t.Errorf("request span's %s: got %q, which names the resource or the owner", k, v.String())
				}
			}

			var redisSpans int
			for _, s := range rec.Ended() {
				if s.SpanKind() != trace.SpanKindClient {
					continue
				}
				if s.Parent().SpanID() != srv.SpanContext().SpanID() || s.SpanContext().TraceID() != srv.SpanContext().TraceID() {
					t.Errorf("Redis span %q: got parent %s in trace %s, want the request span %s", s.Name(), s.Parent().SpanID(), s.SpanContext().TraceID(), srv.SpanContext().SpanID())
					continue
				}
				redisSpans++
				for k, v := range attrs(s) {
					if strings.Contains(v.String(), "user-42") || strings.Contains(v.String(), "svc-a") {
						t.Errorf("Redis span's %s: got %q, which names the resource or the owner", k, v.String())
					}
				}
			}
			if redisSpans == 0 {
				t.Errorf("Redis spans under the request span: got none of %d spans", len(rec.Ended()))
			}

			lines := requests()
			if len(lines) != 1 {
				t.Fatalf("request log lines: got %d, want 1", len(lines))
			}
			if got := lines[0]["trace_id"]; got != callerTrace {
				t.Errorf("log line's trace_id: got %v, want %s", got, callerTrace)
			}
			if got, want := lines[0]["span_id"], srv.SpanContext().SpanID().String(); got != want {
				t.Errorf("log line's span_id: got %v, want the request span's %s", got, want)
			}
		})
	}
}

func TestProbesAndTheGatewaysOwnRedisCallsStartNoTrace(t *testing.T) {
	t.Parallel()
	ts, rec, _ := tracedServer(t, nil)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		res, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_ = res.Body.Close()
	}
	if got := rec.Ended(); len(got) != 0 {
		t.Errorf("spans: got %d (first %q), want none for probes, scrapes and calls outside requests", len(got), got[0].Name())
	}
}

func TestWithTracingOffTheLogLineCarriesNoTraceIDs(t *testing.T) {
	t.Parallel()
	log, lb := capture(t)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = redistest.Start(t).URL()
	s, err := server.New(cfg, log)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	if got := post(t, ts.URL+"/locks/job", `{"owner":"svc-a","ttl_seconds":30}`, callerParent); got != http.StatusOK {
		t.Fatalf("acquire: got %d, want 200", got)
	}
	lines := records(t, lb, "info", "request")
	if len(lines) != 1 {
		t.Fatalf("request log lines: got %d, want 1", len(lines))
	}
	if _, ok := lines[0]["trace_id"]; ok {
		t.Errorf("log line: got trace_id %v with tracing off, want none", lines[0]["trace_id"])
	}
}

func TestARefusedRedisCallIsAFailedSpanOfItsRequest(t *testing.T) {
	t.Parallel()
	ts, rec, _, rs := tracedServerOn(t, redistest.Start(t), nil)
	rs.Kill()
	for range 2 { // the first call finds Redis gone, the second is refused at once
		if got := post(t, ts.URL+"/locks/job", `{"owner":"svc-a","ttl_seconds":30}`, callerParent); got != http.StatusServiceUnavailable {
			t.Fatalf("acquire with Redis down: got %d, want 503", got)
		}
	}
	var srv, failed int
	for _, s := range rec.Ended() {
		switch {
		case s.SpanKind() == trace.SpanKindServer:
			srv++
			if s.Status().Code != codes.Error {
				t.Errorf("request span with a 503: got status %v, want Error", s.Status().Code)
			}
		case s.SpanKind() == trace.SpanKindClient && s.Status().Code == codes.Error && s.Parent().IsValid():
			failed++
		}
	}
	if srv != 2 || failed < 2 {
		t.Errorf("got %d request spans and %d failed Redis spans under them, want 2 and at least 2", srv, failed)
	}
}
