package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// waitAPI is the routes on miniredis with a subscribed Waiter.
type waitAPI struct{ *apptest.App }

func newWaitAPI(t *testing.T) waitAPI {
	t.Helper()
	return waitAPI{apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "hw:", Wait: true})}
}

// post sends a JSON body with ctx; it does not fail the test, so it may
// run in a goroutine.
func (a waitAPI) post(ctx context.Context, path, body string) *apptest.Answer {
	return apptest.Serve(a.E, apptest.Request(http.MethodPost, path, body).WithContext(ctx))
}

func (a waitAPI) queued(resource string, n int) func() bool {
	return func() bool { return a.Waiter.Queued(a.Locker, resource) == n }
}

func TestAcquireWithWait(t *testing.T) {
	t.Parallel()
	t.Run("acquires when the holder releases", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Want(t, http.StatusOK)
		done := make(chan *apptest.Answer, 1)
		go func() {
			done <- a.post(context.Background(), "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":10000}`)
		}()
		apptest.WaitFor(t, "waiter queued", a.queued("job", 1))
		if got := testutil.ToFloat64(a.Metrics.Waiters); got != 1 {
			t.Errorf("got waiters gauge %v, want 1", got)
		}
		if _, err := a.Locks.Release(context.Background(), "", "job", "a", 0); err != nil {
			t.Fatal(err)
		}
		resp := <-done
		v := resp.Map(t)
		if resp.StatusCode != http.StatusOK || v["acquired"] != true {
			t.Fatalf("got %d %v, want 200 acquired", resp.StatusCode, v)
		}
		if got := testutil.ToFloat64(a.Metrics.Acquires.WithLabelValues("waited")); got != 1 {
			t.Errorf("got waited count %v, want 1", got)
		}
		if got := testutil.ToFloat64(a.Metrics.Waiters); got != 0 {
			t.Errorf("got waiters gauge %v after the answer, want 0", got)
		}
	})

	t.Run("answers contended once wait_ms has passed", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Want(t, http.StatusOK)
		start := time.Now()
		resp := a.post(context.Background(), "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":200}`)
		elapsed := time.Since(start)
		v := resp.Map(t)
		if resp.StatusCode != http.StatusOK || v["acquired"] != false || v["resource"] != "job" {
			t.Fatalf("got %d %v, want 200 contended", resp.StatusCode, v)
		}
		if ms, _ := v["retry_after_ms"].(float64); ms < 55000 || ms > 60000 {
			t.Errorf("got retry_after_ms %v, want the holder's remaining ~59800", v["retry_after_ms"])
		}
		if elapsed < 200*time.Millisecond {
			t.Errorf("got an answer after %v, want at least wait_ms (200ms)", elapsed)
		}
		if got := testutil.ToFloat64(a.Metrics.Acquires.WithLabelValues("timed_out")); got != 1 {
			t.Errorf("got timed_out count %v, want 1", got)
		}
	})

	t.Run("a free resource is acquired at once and counted as acquired", func(t *testing.T) {
		a := newWaitAPI(t)
		resp := a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60,"wait_ms":5000}`)
		if v := resp.Map(t); v["acquired"] != true {
			t.Fatalf("got %v, want acquired", v)
		}
		if got := testutil.ToFloat64(a.Metrics.Acquires.WithLabelValues("acquired")); got != 1 {
			t.Errorf("got acquired count %v, want 1", got)
		}
	})

	t.Run("a client that goes away is dropped at once", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Want(t, http.StatusOK)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *apptest.Answer, 1)
		go func() { done <- a.post(ctx, "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":30000}`) }()
		apptest.WaitFor(t, "waiter queued", a.queued("job", 1))
		cancel()
		select {
		case resp := <-done:
			if resp.StatusCode != 499 {
				t.Errorf("got status %d, want 499 in the log", resp.StatusCode)
			}
		case <-time.After(10 * time.Second):
			// Only a guard against a hang: the drop is immediate.
			t.Fatal("the handler did not return within 10s of the client leaving")
		}
		if q := a.Waiter.Queued(a.Locker, "job"); q != 0 {
			t.Errorf("got %d queued, want 0", q)
		}
		if got := testutil.ToFloat64(a.Metrics.Acquires.WithLabelValues("abandoned")); got != 1 {
			t.Errorf("got abandoned count %v, want 1", got)
		}
	})

	t.Run("rejects wait_ms outside 0..max_wait_ms", func(t *testing.T) {
		a := newWaitAPI(t)
		for _, w := range []string{"-1", "30001", "1.5", `"100"`, "null", "1e3"} {
			resp := a.post(context.Background(), "/locks/job", fmt.Sprintf(`{"owner":"a","ttl_seconds":60,"wait_ms":%s}`, w))
			v := resp.Map(t)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("wait_ms %s: got %d %v, want 422", w, resp.StatusCode, v)
			}
		}
		if _, err := a.Locks.Status(context.Background(), "", "job"); err == nil {
			t.Error("a rejected request took the lock")
		}
	})
}
