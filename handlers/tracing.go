package handlers

import (
	"strconv"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/metrics"
)

// tracerName is the instrumentation scope of the request spans.
const tracerName = "github.com/leasegate/leasegate/handlers"

// The request span's attributes of the gateway's own (docs/observability.md).
const (
	attrTenant    = attribute.Key("leasegate.tenant")
	attrLockClass = attribute.Key("leasegate.lock_class")
)

// propagator reads the caller's trace context: W3C traceparent and
// tracestate, and baggage.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// untraced are the routes that start no span: probes and scrapes, which
// would drown the requests in a tracing backend.
var untraced = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// traceRequests starts each request's server span, continuing the
// caller's trace (traceparent), and puts it in the request's context, so
// that the engine's Redis calls (redisotel, installed by server) are its
// children and the request log line carries its ids. The span is named
// by the route template, never the raw path: resource names and user ids
// stay out of it, as do the query and the headers. Installed only when
// tracing is on (Deps.Tracer).
func traceRequests(tp trace.TracerProvider, m *metrics.Metrics) echo.MiddlewareFunc {
	tracer := tp.Tracer(tracerName)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Echo v4 has routed the request before middleware runs.
			route := routeLabel(c)
			if untraced[route] {
				return next(c)
			}
			req := c.Request()
			ctx := propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
			ctx, span := tracer.Start(ctx, req.Method+" "+route,
				trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(
					attribute.String("http.request.method", methodLabel(req.Method)),
					attribute.String("http.route", route),
				))
			defer span.End()
			c.SetRequest(req.WithContext(ctx))
			err := next(c)
			if err != nil {
				// As requestLogger does: the status set is the one sent.
				c.Error(err)
			}
			status := c.Response().Status
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
			if p, ok := c.Get(api.PrincipalKey).(leasegate.Principal); ok {
				span.SetAttributes(attrTenant.String(p.Tenant))
			}
			if c.Param("resource") != "" {
				// The decoded resource, as the metrics classify it; the
				// resource itself stays out of the span.
				var ck checker
				if r, ok := pathParam(c, &ck, "resource"); ok {
					span.SetAttributes(attrLockClass.String(m.LockClass(r)))
				}
			}
			return nil
		}
	}
}
