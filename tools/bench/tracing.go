package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/tracing"
)

// newTracedGateway is a gateway with tracing on, sampling ratio of the
// requests (no traceparent comes in: each request is a root), as
// `leasegate serve` builds it from OTEL_TRACES_SAMPLER=
// parentbased_traceidratio: the OTLP/HTTP exporter and batch processor
// of the SDK, sending to a sink on loopback that reads and discards each
// export. close stops the gateway, flushes the spans and stops the sink.
func newTracedGateway(ctx context.Context, opt *redis.Options, cfg Config, runID string, ratio float64) (bench.Cycler, func(), error) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(sink.URL+"/v1/traces"), otlptracehttp.WithInsecure())
	if err != nil {
		sink.Close()
		return nil, nil, fmt.Errorf("bench: tracing: %w", err)
	}
	res, err := tracing.Resource(ctx, "bench")
	if err != nil {
		sink.Close()
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(tracing.RequestsOnly(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)))),
	)
	label := fmt.Sprintf("gateway, traced %g%%", ratio*100)
	suffix := strings.NewReplacer(" ", "", ",", "", "%", "", ".", "_").Replace(label)
	g, err := bench.StartGateway("redis://"+opt.Addr, cfg.Config, tp)
	if err != nil {
		_ = tp.Shutdown(ctx)
		sink.Close()
		return nil, nil, err
	}
	return g.Cycle(cfg.Config, label, "/locks/bench-"+runID+"-"+suffix+"-", false, ""), func() {
		g.Close()
		_ = tp.Shutdown(context.Background())
		sink.Close()
	}, nil
}
