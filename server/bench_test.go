package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// BenchmarkHTTPAcquireRelease measures one acquire of a free resource plus
// its release through the whole gateway: Echo routing, middleware, strict
// JSON decoding, the lock scripts on a real redis-server, the problem and
// JSON encoding. "in-process" calls the handler directly (no network on
// the HTTP side); "loopback" goes through net/http over TCP with a
// keep-alive client, so B/op and allocs/op include the client too.
// Results: docs/benchmarks.md.
func BenchmarkHTTPAcquireRelease(b *testing.B) {
	srv := redistest.Start(b)
	cfg := server.DefaultConfig()
	cfg.RedisURL = srv.URL()
	cfg.AbuseLog = io.Discard
	s := gatewaytest.Start(b, cfg, nil)
	base := gatewaytest.URL(s)
	h := s.Handler()

	// A sender makes one request and checks its status; errors, not
	// Fatal, because RunParallel bodies run on other goroutines.
	type sender func(method, path string, body []byte, want int) ([]byte, error)
	inProcess := func(method, path string, body []byte, want int) ([]byte, error) {
		return sendInProcess(h, method, path, body, want)
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(hc.CloseIdleConnections)
	overTCP := func(method, path string, body []byte, want int) ([]byte, error) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != want {
			return nil, fmt.Errorf("%s %s: got %d %s (%v), want %d", method, path, resp.StatusCode, data, err, want)
		}
		return data, nil
	}

	acquireBody := []byte(`{"owner":"bench-owner","ttl_seconds":30}`)
	releaseBody := []byte(`{"owner":"bench-owner"}`)
	granted := []byte(`"acquired":true`)
	iteration := func(send sender, path string) error {
		got, err := send(http.MethodPost, path, acquireBody, http.StatusOK)
		if err != nil {
			return err
		}
		if !bytes.Contains(got, granted) {
			return fmt.Errorf("acquire %s: got %s, want it granted", path, got)
		}
		_, err = send(http.MethodDelete, path, releaseBody, http.StatusNoContent)
		return err
	}

	var seq atomic.Int64
	for _, mode := range []struct {
		name string
		send sender
	}{{"in-process", inProcess}, {"loopback", overTCP}} {
		b.Run(mode.name+"/sequential", func(b *testing.B) {
			path := "/locks/bench-" + strconv.FormatInt(seq.Add(1), 10)
			b.ReportAllocs()
			for b.Loop() {
				if err := iteration(mode.send, path); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode.name+"/parallel, one resource per goroutine", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				path := "/locks/bench-" + strconv.FormatInt(seq.Add(1), 10)
				for pb.Next() {
					if err := iteration(mode.send, path); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// sendInProcess serves one JSON request on h (no network) and returns the
// answer's body, or an error when its status is not want.
func sendInProcess(h http.Handler, method, path string, body []byte, want int) ([]byte, error) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		return nil, fmt.Errorf("%s %s: got %d %s, want %d", method, path, rec.Code, rec.Body, want)
	}
	return rec.Body.Bytes(), nil
}
