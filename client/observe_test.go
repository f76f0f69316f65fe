package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/redistest"
)

// Observe reconnects when the stream drops, sends the state it finds when
// it differs from the last one sent, and closes its channel when its
// context ends.
func TestObserveReconnectsAfterTheStreamDrops(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	leader := func(term int64, value string) string {
		return fmt.Sprintf(`{"name":"jobs","candidate":"node-a","value":%q,"term":%d,"elected_at":"2026-12-04T08:00:00.000Z","expires_at":"2026-12-04T08:00:30.000Z","at":"2026-12-04T08:00:00.000Z"}`, value, term)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/elections/jobs/events" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch conns.Add(1) {
		case 1:
			// A state, a proclaim, then the connection drops.
			fmt.Fprintf(w, "event: state\ndata: %s\n\nevent: proclaimed\ndata: %s\n\n", leader(7, "a"), leader(7, "b"))
		case 2:
			// The same leader again (not sent twice), then a new term.
			fmt.Fprintf(w, "event: state\ndata: %s\n\nevent: resigned\ndata: %s\n\nevent: elected\ndata: %s\n\n", leader(7, "b"), leader(7, "b"), leader(9, "c"))
		default:
			fmt.Fprintf(w, "event: state\ndata: %s\n\n", leader(9, "c"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	old := client.ObserveRetry
	client.ObserveRetry = time.Millisecond
	t.Cleanup(func() { client.ObserveRetry = old })

	ctx, cancel := context.WithCancel(context.Background())
	ch := client.New(srv.URL).Observe(ctx, "jobs")
	type seen struct {
		term  int64
		value string
	}
	want := []seen{{7, "a"}, {7, "b"}, {0, ""}, {9, "c"}}
	for i, w := range want {
		select {
		case ld := <-ch:
			if ld.Term != w.term || ld.Value != w.value {
				t.Fatalf("leader %d: got term %d value %q, want term %d value %q", i, ld.Term, ld.Value, w.term, w.value)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("leader %d: nothing within 5s", i)
		}
	}
	// After the second drop it connects again (and sends nothing: the
	// state is the one it sent last).
	redistest.Eventually(t, 5*time.Second, "a third connection after the second drop", func() bool { return conns.Load() >= 3 })
	select {
	case ld := <-ch:
		t.Fatalf("got %+v after the reconnect, want nothing new", ld)
	default:
	}
	cancel()
	select {
	case _, ok := <-ch:
		for ok {
			_, ok = <-ch
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel was not closed within 5s of the context's end")
	}
}

// A stream the gateway ends with a reconnect event (it is shutting down)
// is reconnected at once, not after ObserveRetry; ObserveEvents returns
// leasegate.ErrShuttingDown for it. (Not parallel: it sets ObserveRetry,
// which the test above sets too.)
func TestObserveReconnectsAtOnceOnAReconnectEvent(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		term := conns.Add(1)
		fmt.Fprintf(w, `event: state`+"\n"+`data: {"name":"jobs","candidate":"node-a","value":"","term":%d,"elected_at":"2026-12-04T08:00:00.000Z","expires_at":"2026-12-04T08:00:30.000Z","at":"2026-12-04T08:00:00.000Z"}`+"\n\n", term)
		if term == 1 {
			fmt.Fprint(w, "event: reconnect\ndata: null\n\n")
			return
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	old := client.ObserveRetry
	client.ObserveRetry = time.Hour
	t.Cleanup(func() { client.ObserveRetry = old })

	c := client.New(srv.URL)
	if err := c.ObserveEvents(context.Background(), "jobs", func(client.ElectionEvent) error { return nil }); !errors.Is(err, leasegate.ErrShuttingDown) {
		t.Fatalf("ObserveEvents: got %v, want %v", err, leasegate.ErrShuttingDown)
	}
	conns.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.Observe(ctx, "jobs")
	t.Cleanup(func() {
		// Observe has returned (its channel closed) before ObserveRetry
		// is put back (cleanups run last first).
		cancel()
		for range ch {
		}
	})
	for _, want := range []int64{1, 2} {
		select {
		case ld := <-ch:
			if ld.Term != want {
				t.Fatalf("got term %d, want %d", ld.Term, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("term %d: nothing within 10s (ObserveRetry is an hour)", want)
		}
	}
}
