package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/leasegate/leasegate/client"
)

func TestTheClientSendsTheCallersTraceparent(t *testing.T) {
	// The global propagator, as a program that traces sets it. Other
	// tests' contexts carry no span, so they send nothing either way.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	var (
		mu  sync.Mutex
		got []string
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("traceparent"))
		mu.Unlock()
		http.Error(w, "not a gateway", http.StatusTeapot)
	}))
	t.Cleanup(hs.Close)
	c := client.New(hs.URL)

	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	_, _ = c.Acquire(traced, "job", time.Minute)
	_, _ = c.Acquire(context.Background(), "job", time.Minute)

	mu.Lock()
	defer mu.Unlock()
	want := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("traceparent sent: got %q, want %q (the caller's, then none without a span)", got, want)
	}
}
