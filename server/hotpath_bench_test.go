package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// BenchmarkHotPathCycle is BenchmarkHTTPAcquireRelease's in-process
// parallel cycle with what production has and that benchmark leaves out:
// a JSON access log (written to io.Discard) on the request logger.
// Sub-benchmarks: the gateway as configured by default, with
// auto-pipelining off, and the default gateway with one caller at a time
// (serial: every pipeline holds one call, so the instructions a cycle
// takes do not depend on how calls happened to batch; bench/tracingcost.sh
// counts them). How to run it: docs/benchmarks.md ("Go benchmarks in process").
func BenchmarkHotPathCycle(b *testing.B) {
	for _, tc := range []struct {
		name   string
		batch  bool
		serial bool
	}{{"autopipe", true, false}, {"no-autopipe", false, false}, {"serial", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := redistest.Start(b)
			cfg := server.DefaultConfig()
			cfg.RedisURL = srv.URL()
			cfg.AbuseLog = io.Discard
			cfg.NoAutoPipeline = !tc.batch
			enc := zap.NewProductionEncoderConfig()
			log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(io.Discard), zapcore.InfoLevel))
			h := gatewaytest.Start(b, cfg, log).Handler()
			acquireBody := []byte(`{"owner":"bench-owner","ttl_seconds":30}`)
			releaseBody := []byte(`{"owner":"bench-owner"}`)
			send := func(method, path string, body []byte, want int) bool {
				if _, err := sendInProcess(h, method, path, body, want); err != nil {
					b.Error(err)
					return false
				}
				return true
			}
			var seq atomic.Int64
			b.ReportAllocs()
			if tc.serial {
				for b.Loop() {
					if !send(http.MethodPost, "/locks/hot", acquireBody, http.StatusOK) ||
						!send(http.MethodDelete, "/locks/hot", releaseBody, http.StatusNoContent) {
						return
					}
				}
				return
			}
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				path := "/locks/hot-" + strconv.FormatInt(seq.Add(1), 10)
				for pb.Next() {
					if !send(http.MethodPost, path, acquireBody, http.StatusOK) ||
						!send(http.MethodDelete, path, releaseBody, http.StatusNoContent) {
						return
					}
				}
			})
		})
	}
}

// BenchmarkHarnessOnly is what BenchmarkHTTPAcquireRelease's in-process
// sender costs by itself per cycle (two httptest requests and recorders,
// each answered with a header and a small body), to subtract from its
// allocs/op and B/op.
func BenchmarkHarnessOnly(b *testing.B) {
	body := []byte(`{"owner":"bench-owner","ttl_seconds":30}`)
	answer := []byte(`{"acquired":true}`)
	b.ReportAllocs()
	for b.Loop() {
		for range 2 {
			req := httptest.NewRequest(http.MethodPost, "/locks/x", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			rec.WriteHeader(http.StatusOK)
			_, _ = rec.Write(answer)
		}
	}
}
