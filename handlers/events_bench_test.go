package handlers_test

import (
	"bufio"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// BenchmarkEventStreamMemory opens b.N event streams on one resource and
// reports the gateway's heap and goroutines per open stream
// (docs/benchmarks.md). The clients are bare TCP connections that read
// only the first event, so what is measured is the gateway's side.
//
//	go test -run '^$' -bench EventStreamMemory -benchtime 500x ./handlers/
func BenchmarkEventStreamMemory(b *testing.B) {
	// The production poll (1 s), not the tests' 20 ms.
	app := apptest.NewApp(b, redistest.OnRedis(b), apptest.Options{Prefix: "lg:", Wait: true, WatchPoll: time.Second})
	srv := httptest.NewServer(app.E)
	b.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	mem := apptest.StartMem()
	conns := make([]net.Conn, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte("GET /locks/hot/events HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			b.Fatal(err)
		}
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				b.Fatal(err)
			}
			if strings.HasPrefix(line, "event: state") {
				break
			}
		}
	}
	mem.Report(b, "stream")
	for _, c := range conns {
		_ = c.Close()
	}
	apptest.WaitFor(b, "every watcher has gone", func() bool { return app.Waiter.Watched() == 0 })
}
