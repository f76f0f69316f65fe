package main

import (
	"strings"
	"testing"
)

func TestServeTracingSettings(t *testing.T) {
	t.Parallel()
	const endpoint = "http://127.0.0.1:1"
	t.Run("an endpoint turns tracing on, and the start log says so", func(t *testing.T) {
		code, out := serveOnce(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, "--addr", "127.0.0.1:0")
		if code != 0 || !strings.Contains(out, "tracing on") {
			t.Errorf("got exit %d, output %q; want 0 and the tracing line", code, out)
		}
	})
	t.Run("without an endpoint tracing is off", func(t *testing.T) {
		code, out := serveOnce(t, map[string]string{"OTEL_SERVICE_NAME": "gw"}, "--addr", "127.0.0.1:0")
		if code != 0 || strings.Contains(out, "tracing on") {
			t.Errorf("got exit %d, output %q; want 0 and no tracing line", code, out)
		}
	})
	for name, env := range map[string]map[string]string{
		"the grpc protocol":  {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"an unknown sampler": {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_SAMPLER": "xray"},
	} {
		t.Run(name+" is refused", func(t *testing.T) {
			code, out := serveOnce(t, env, "--addr", "127.0.0.1:0")
			if code != 2 || !strings.Contains(out, "OTEL_") {
				t.Errorf("got exit %d, output %q; want 2 naming the OTEL_ variable", code, out)
			}
		})
	}
}
