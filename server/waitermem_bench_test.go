package server_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// BenchmarkWaitingAcquireMemory: what one waiting acquire costs the
// gateway while it waits. b.N raw TCP clients each send POST /locks/job
// with wait_ms on a held resource to a gateway built by server.New (a
// real redis-server behind it); once its waiters gauge reads b.N, it
// reports the Go heap, stacks and goroutines per waiter. With
// LEASEGATE_WAITER_PROFILES=dir it also writes dir/heap.pprof (after a
// GC, so in-use objects; run with -test.memprofilerate=1 for every
// allocation) and dir/goroutine.txt at that moment. `leasegate bench
// -waiters N` measures the RSS of a real `leasegate serve` the same way
// (docs/benchmarks.md).
//
//	go test -run '^$' -bench WaitingAcquireMemory -benchtime 2000x ./server/
func BenchmarkWaitingAcquireMemory(b *testing.B) {
	cfg := server.DefaultConfig()
	cfg.RedisURL = redistest.Start(b).URL()
	cfg.MaxWaiters = 0
	cfg.AbuseLog = io.Discard
	s := gatewaytest.Start(b, cfg, nil)
	base := gatewaytest.URL(s)
	apptest.Do(b, s.Handler(), http.MethodPost, "/locks/job", `{"owner":"holder","ttl_seconds":300}`).Want(b, http.StatusOK)
	waiters := func(n int) func() bool {
		want := "leasegate_lock_waiters " + strconv.Itoa(n) + "\n"
		return func() bool {
			resp, err := http.Get(base + "/metrics")
			if err != nil {
				b.Fatal(err)
			}
			defer resp.Body.Close()
			text, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(text), want)
		}
	}

	mem := apptest.StartMem()
	conns := make([]net.Conn, 0, b.N)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		apptest.WaitFor(b, "every waiter has gone", waiters(0))
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		body := `{"owner":"w` + strconv.Itoa(i) + `","ttl_seconds":60,"wait_ms":30000}`
		req := "POST /locks/job HTTP/1.1\r\nHost: " + s.Addr() + "\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
		if _, err := io.WriteString(c, req); err != nil {
			b.Fatal(err)
		}
	}
	apptest.WaitFor(b, "every acquire waiting", waiters(b.N))
	mem.Report(b, "waiter")
	if dir := os.Getenv("LEASEGATE_WAITER_PROFILES"); dir != "" {
		for name, debug := range map[string]int{"heap.pprof": 0, "goroutine.txt": 1} {
			f, err := os.Create(filepath.Join(dir, name))
			if err != nil {
				b.Fatal(err)
			}
			if err := pprof.Lookup(strings.TrimSuffix(strings.TrimSuffix(name, ".pprof"), ".txt")).WriteTo(f, debug); err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	}
}
