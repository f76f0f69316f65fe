package client_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestListForceReleaseAuditAndWatch(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:", Wait: true})
	srv := httptest.NewServer(app.E)
	t.Cleanup(srv.Close)
	c := client.New(srv.URL)
	ctx := context.Background()
	for _, r := range []string{"job-a", "job-b", "other"} {
		if _, err := c.Acquire(ctx, r, time.Minute, client.WithOwner("w1")); err != nil {
			t.Fatal(err)
		}
	}
	page, err := c.List(ctx, client.ListOptions{Prefix: "job-", Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Items[0].Resource != "job-a" || page.NextCursor != "job-a" {
		t.Fatalf("List: got %+v, %v; want job-a and a cursor", page, err)
	}
	page, err = c.List(ctx, client.ListOptions{Prefix: "job-", Limit: 1, Cursor: page.NextCursor})
	if err != nil || len(page.Items) != 1 || page.Items[0].Resource != "job-b" {
		t.Fatalf("List page 2: got %+v, %v; want job-b", page, err)
	}

	events := make(chan client.Event, 8)
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(wctx, "job-a", func(e client.Event) error { events <- e; return nil })
	}()
	if e := <-events; e.Kind != "state" || e.Lock == nil || e.Lock.Owner != "w1" {
		t.Fatalf("first event: got %+v, want the state with w1's lease", e)
	}
	held, err := c.ForceRelease(ctx, "job-a", "wedged")
	if err != nil || held.Owner != "w1" {
		t.Fatalf("ForceRelease: got %+v, %v", held, err)
	}
	if e := <-events; e.Kind != "force-released" || e.Lock == nil || e.Lock.Token != held.Token {
		t.Errorf("got %+v, want force-released of token %d", e, held.Token)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Watch after its context ended: %v, want nil", err)
	}
	if _, err := c.ForceRelease(ctx, "job-a", "again"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("forcing a free lock: got %v, want ErrNotFound", err)
	}
	trail, err := c.Audit(ctx, 10, "")
	if err != nil || len(trail.Items) != 1 || trail.Items[0].Action != "force-release" || trail.Items[0].Actor != "open" {
		t.Fatalf("Audit: got %+v, %v; want the forced release by open", trail, err)
	}
	if r := trail.Items[0]; r.Reason != "wedged" || r.Details["owner"] != "w1" || r.Details["token"] != held.Token {
		t.Errorf("Audit: got reason %q, details %v; want wedged as given, owner w1 and token %d", r.Reason, r.Details, held.Token)
	}
}
