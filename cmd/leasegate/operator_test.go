package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// lineWaiter hands the command's output to the test a line at a time.
type lineWaiter struct {
	lines chan string
}

func (w *lineWaiter) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l != "" {
			w.lines <- l
		}
	}
	return len(p), nil
}

func TestWatchAndAuditCommands(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:", Wait: true})
	srv := httptest.NewServer(app.E)
	t.Cleanup(srv.Close)
	env := func(k string) string {
		if k == "LEASEGATE_URL" {
			return srv.URL
		}
		return ""
	}
	ctx, stop := context.WithCancel(context.Background())
	out := &lineWaiter{lines: make(chan string, 16)}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"watch", "nightly"}, nil, out, &bytes.Buffer{}, env) }()
	if l := <-out.lines; !strings.Contains(l, "state") || !strings.Contains(l, "is free") {
		t.Errorf("first line %q, want the state: free", l)
	}
	if _, err := app.Locks.Acquire(context.Background(), "", leasegate.AcquireRequest{Resource: "nightly", Owner: "w1", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if l := <-out.lines; !strings.Contains(l, "acquired") || !strings.Contains(l, "owner=w1") {
		t.Errorf("got %q, want acquired by w1", l)
	}
	app.Do(t, "DELETE", "/locks/nightly?force=true&reason=wedged", "").Want(t, 200)
	if l := <-out.lines; !strings.Contains(l, "force-released") {
		t.Errorf("got %q, want force-released", l)
	}
	stop()
	if code := <-done; code != 0 {
		t.Errorf("watch exited %d after an interrupt, want 0", code)
	}
	var buf bytes.Buffer
	if code := run(context.Background(), []string{"audit"}, nil, &buf, &buf, env); code != 0 {
		t.Fatalf("audit exited %d: %s", code, buf.String())
	}
	if got := buf.String(); !strings.Contains(got, "force-release") || !strings.Contains(got, "lock:nightly") || !strings.Contains(got, "wedged") ||
		!strings.Contains(got, "DETAILS") || !strings.Contains(got, "owner=w1 token=") {
		t.Errorf("audit printed %q, want the forced release with its details", got)
	}
}
