// Package tracing builds the gateway's OpenTelemetry tracer provider from
// the standard OTEL_* environment variables: an OTLP/HTTP exporter, a
// batch span processor, the resource (service name, version) and the
// sampler. Tracing is off unless an OTLP endpoint is set; off, the gateway
// installs no instrumentation at all (server.Config.Tracing stays nil).
// docs/observability.md says which variables are read.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// ErrConfig is an OTEL_* variable the gateway cannot honour.
var ErrConfig = errors.New("tracing: bad configuration")

// Enabled reports whether getenv's variables turn tracing on: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), OTEL_SDK_DISABLED is not "true"
// and OTEL_TRACES_EXPORTER is not "none".
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns the tracer provider the environment asks for, or nil
// when tracing is off (Enabled). The exporter reads the rest of the
// OTEL_EXPORTER_OTLP_* variables itself (headers, timeout, protocol
// http/protobuf); the resource reads OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. Shut the provider down when the gateway has
// stopped, so that the last spans are sent.
func FromEnv(ctx context.Context, getenv func(string) string, version string) (*sdktrace.TracerProvider, error) {
	if !Enabled(getenv) {
		return nil, nil
	}
	if p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
		if p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL=%q: the gateway exports http/protobuf only", ErrConfig, p)
		}
	} else if p != "http/protobuf" {
		return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q: the gateway exports http/protobuf only", ErrConfig, p)
	}
	sampler, err := SamplerFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: otlp exporter: %w", err)
	}
	res, err := Resource(ctx, version)
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sampler),
	), nil
}

// Resource names the gateway: service.name leasegate (OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES override it), its version, the SDK.
func Resource(ctx context.Context, version string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("leasegate"), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// SamplerFromEnv is OTEL_TRACES_SAMPLER (with OTEL_TRACES_SAMPLER_ARG)
// as the specification defines it, default parentbased_always_on,
// wrapped in RequestsOnly. The SDK reads the same variables, but only
// when it is given no sampler of its own; reading them here is what lets
// RequestsOnly wrap the one the operator chose.
func SamplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("%w: OTEL_TRACES_SAMPLER_ARG=%q is not a ratio from 0 to 1", ErrConfig, arg)
		}
		return r, nil
	}
	var s sdktrace.Sampler
	switch name {
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	case "traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		s = sdktrace.TraceIDRatioBased(r)
	case "", "parentbased_always_on":
		s = sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "parentbased_always_off":
		s = sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		s = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r))
	default:
		return nil, fmt.Errorf("%w: OTEL_TRACES_SAMPLER=%q is not one the gateway knows (always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio)", ErrConfig, name)
	}
	return RequestsOnly(s), nil
}

// SamplerDescription names the sampler getenv's variables choose, for
// the start log ("" when they are bad).
func SamplerDescription(getenv func(string) string) string {
	s, err := SamplerFromEnv(getenv)
	if err != nil {
		return ""
	}
	return s.Description()
}

// RequestsOnly samples as s does, except that a client span without a
// parent (a Redis call of the gateway's own: the webhook deliverer's
// reads, the index sweep, the outage guard's probes, the release
// subscription) starts no trace: traces begin at requests.
func RequestsOnly(s sdktrace.Sampler) sdktrace.Sampler { return requestsOnly{s} }

type requestsOnly struct{ sdktrace.Sampler }

func (r requestsOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Kind == trace.SpanKindClient && !trace.SpanContextFromContext(p.ParentContext).IsValid() {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop}
	}
	return r.Sampler.ShouldSample(p)
}

func (r requestsOnly) Description() string {
	return "RequestsOnly{" + r.Sampler.Description() + "}"
}
