package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/metrics"
)

const requestIDKey = "leasegate.request_id"

// An incoming X-Request-Id is kept only when it is short and plain, so a
// client cannot smuggle anything into logs or headers through it.
var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestID returns the request's id (set by requestLogger).
func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// RequestID returns the id of the request, for other packages' logs.
func RequestID(c echo.Context) string { return requestID(c) }

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

// requestLogger assigns a request id and writes one JSON line per request
// with zap, whose encoder escapes every user-supplied string.
func requestLogger(log *zap.Logger, m *metrics.Metrics) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			id := c.Request().Header.Get(echo.HeaderXRequestID)
			if !safeRequestID.MatchString(id) {
				id = newRequestID()
			}
			c.Set(requestIDKey, id)
			c.Response().Header().Set(echo.HeaderXRequestID, id)
			err := next(c)
			if err != nil {
				// Let the error handler write the problem now, so the
				// logged status is the one the client gets.
				c.Error(err)
			}
			route := c.Path()
			if route == "" || route == "/*" {
				route = "unmatched"
			}
			status := c.Response().Status
			elapsed := time.Since(start)
			m.RequestDuration.WithLabelValues(route, methodLabel(c.Request().Method), strconv.Itoa(status)).Observe(elapsed.Seconds())
			log.Info("request",
				zap.String("request_id", id),
				zap.String("method", c.Request().Method),
				zap.String("route", route),
				zap.Int("status", status),
				zap.Float64("latency_ms", float64(elapsed.Microseconds())/1000),
				zap.String("remote_ip", c.RealIP()),
			)
			return nil
		}
	}
}
