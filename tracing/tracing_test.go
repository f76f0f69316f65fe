package tracing_test

import (
	"context"
	"errors"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/leasegate/leasegate/tracing"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestTracingIsOffUnlessAnEndpointIsSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want bool
	}{
		{"no variables", nil, false},
		{"a service name alone", map[string]string{"OTEL_SERVICE_NAME": "gw"}, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"an endpoint with the SDK disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_SDK_DISABLED": "true"}, false},
		{"an endpoint with the exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tracing.Enabled(env(tc.vars)); got != tc.want {
				t.Errorf("Enabled: got %v, want %v", got, tc.want)
			}
			tp, err := tracing.FromEnv(context.Background(), env(tc.vars), "test")
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			if tp != nil {
				_ = tp.Shutdown(context.Background())
			}
			if (tp != nil) != tc.want {
				t.Errorf("FromEnv: got a provider %v, want one %v", tp != nil, tc.want)
			}
		})
	}
}

func TestBadSamplerSettingsAreRefused(t *testing.T) {
	for _, vars := range []map[string]string{
		{"OTEL_TRACES_SAMPLER": "jaeger_remote"},
		{"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
		{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
	} {
		if _, err := tracing.SamplerFromEnv(env(vars)); !errors.Is(err, tracing.ErrConfig) {
			t.Errorf("SamplerFromEnv(%v): got %v, want ErrConfig", vars, err)
		}
	}
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
	if _, err := tracing.FromEnv(context.Background(), env(vars), "test"); !errors.Is(err, tracing.ErrConfig) {
		t.Errorf("FromEnv with grpc: got %v, want ErrConfig", err)
	}
}

func TestSamplerFollowsTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{nil, "RequestsOnly{ParentBased{root:AlwaysOnSampler"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"}, "RequestsOnly{ParentBased{root:TraceIDRatioBased{0.01}"},
		{map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, "RequestsOnly{AlwaysOffSampler}"},
	} {
		s, err := tracing.SamplerFromEnv(env(tc.vars))
		if err != nil {
			t.Fatalf("SamplerFromEnv(%v): %v", tc.vars, err)
		}
		if got := s.Description(); len(got) < len(tc.want) || got[:len(tc.want)] != tc.want {
			t.Errorf("SamplerFromEnv(%v): got %q, want it to start %q", tc.vars, got, tc.want)
		}
	}
}

func TestRequestsOnlyStartsNoTraceAtARedisCall(t *testing.T) {
	s := tracing.RequestsOnly(sdktrace.AlwaysSample())
	parent := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled,
	}))
	for _, tc := range []struct {
		name string
		ctx  context.Context
		kind trace.SpanKind
		want sdktrace.SamplingDecision
	}{
		{"a request", context.Background(), trace.SpanKindServer, sdktrace.RecordAndSample},
		{"a Redis call of a request", parent, trace.SpanKindClient, sdktrace.RecordAndSample},
		{"a Redis call of the gateway's own", context.Background(), trace.SpanKindClient, sdktrace.Drop},
	} {
		got := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: tc.ctx, TraceID: trace.TraceID{2}, Kind: tc.kind}).Decision
		if got != tc.want {
			t.Errorf("%s: got decision %v, want %v", tc.name, got, tc.want)
		}
	}
}
