package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/metrics"
)

// safeRequestID says whether an incoming X-Request-Id is kept: only when it
// is short and plain (1 to 64 of [A-Za-z0-9._:-]), so a client cannot
// smuggle anything into logs or headers through it.
func safeRequestID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// Request ids are 24 hex digits: 12 random ones drawn once per process
// and a 48-bit counter. They only have to be unique (they name a log
// line), not unguessable, so one crypto/rand read per process is enough
// instead of one per request.
var (
	requestIDPrefix = func() [12]byte {
		var r [6]byte
		_, _ = rand.Read(r[:])
		var p [12]byte
		hex.Encode(p[:], r[:])
		return p
	}()
	requestIDSeq atomic.Uint64
)

func newRequestID() string {
	var b [24]byte
	copy(b[:12], requestIDPrefix[:])
	n := requestIDSeq.Add(1)
	for i := 23; i >= 12; i-- {
		b[i] = hexDigits[n&0xF]
		n >>= 4
	}
	return string(b[:])
}

// RequestID returns the request's id. requestLogger puts it in the
// response's X-Request-Id header before anything else runs, so it is read
// from there (no per-request entry in the Echo context's map).
func RequestID(c echo.Context) string {
	if v := c.Response().Header()[echo.HeaderXRequestID]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// methodLabel is the method as a metrics label: the standard methods, and
// "other" for any other token a client sends (any token is a valid method,
// and each label value would be a series kept for the life of the process).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "other"
}

// routeLabel is how the metrics, the log and the spans name a request's
// route: its template, or "unmatched" for a path no route matched (never
// the raw path, which carries resource names and user ids).
func routeLabel(c echo.Context) string {
	if r := c.Path(); r != "" && r != "/*" {
		return r
	}
	return "unmatched"
}

// requestFields is the one log line's fields, pooled: zap's variadic
// Write would otherwise put a fresh slice on the heap per request.
type requestFields struct{ f [8]zap.Field }

var requestFieldsPool = sync.Pool{New: func() any { return new(requestFields) }}

// requestLogger assigns a request id and writes one JSON line per request
// with zap, whose encoder escapes every user-supplied string. With traced
// (tracing on), the line carries the request span's trace_id and span_id
// (traceRequests).
func requestLogger(log *zap.Logger, m *metrics.Metrics, traced bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			req := c.Request()
			id := req.Header.Get(echo.HeaderXRequestID)
			if !safeRequestID(id) {
				id = newRequestID()
			}
			c.Response().Header()[echo.HeaderXRequestID] = []string{id}
			err := next(c)
			if err != nil {
				// Let the error handler write the problem now, so the
				// logged status is the one the client gets.
				c.Error(err)
			}
			route := routeLabel(c)
			status := c.Response().Status
			elapsed := time.Since(start)
			m.ObserveRequest(route, methodLabel(req.Method), status, elapsed)
			if ce := log.Check(zap.InfoLevel, "request"); ce != nil {
				rf := requestFieldsPool.Get().(*requestFields)
				rf.f = [8]zap.Field{
					zap.String("request_id", id),
					zap.String("method", req.Method),
					zap.String("route", route),
					zap.Int("status", status),
					zap.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
					zap.String("remote_ip", c.RealIP()),
				}
				n := 6
				if traced {
					if sc := trace.SpanContextFromContext(req.Context()); sc.IsValid() {
						rf.f[6] = zap.String("trace_id", sc.TraceID().String())
						rf.f[7] = zap.String("span_id", sc.SpanID().String())
						n = 8
					}
				}
				ce.Write(rf.f[:n]...)
				rf.f = [8]zap.Field{}
				requestFieldsPool.Put(rf)
			}
			return nil
		}
	}
}

// Wrap applies a route's middleware once, when the route is registered.
// Echo v4 applies middleware given to e.GET/e.POST/... anew on every
// request (a closure per middleware per request); wrapping here gives the
// same order (the first middleware runs first) without those allocations.
func Wrap(h echo.HandlerFunc, mw ...echo.MiddlewareFunc) echo.HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		h = mw[i](h)
	}
	return h
}
