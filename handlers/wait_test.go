package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/redislock"
)

// waitAPI is the routes on miniredis with a subscribed Waiter.
type waitAPI struct {
	e *echo.Echo
	l *redislock.Locker
	w *redislock.Waiter
	m *metrics.Metrics
}

func newWaitAPI(t *testing.T) *waitAPI {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ch := "hw:released"
	l := redislock.New(rdb, redislock.Options{Prefix: "hw:", ReleaseChannel: ch})
	w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: ch, PollInterval: time.Hour})
	t.Cleanup(w.Close)
	m := metrics.NewForTest()
	e := handlers.New(handlers.DefaultConfig(), handlers.Deps{Locks: redislock.NewService(l, w, 0), Metrics: m})
	end := time.Now().Add(5 * time.Second)
	for !w.Active() {
		if time.Now().After(end) {
			t.Fatal("subscription not active after 5s")
		}
		time.Sleep(time.Millisecond)
	}
	return &waitAPI{e: e, l: l, w: w, m: m}
}

func (a *waitAPI) post(ctx context.Context, path, body string) *http.Response {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)).WithContext(ctx)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	a.e.ServeHTTP(rec, req)
	return rec.Result()
}

func decodeWaitAnswer(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	return v
}

func (a *waitAPI) queued(resource string, n int) func() bool {
	return func() bool { return a.w.Queued(a.l, resource) == n }
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("%s: not true after 5s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestAcquireWithWait(t *testing.T) {
	t.Run("acquires when the holder releases", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Body.Close()
		done := make(chan *http.Response, 1)
		go func() {
			done <- a.post(context.Background(), "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":10000}`)
		}()
		waitUntil(t, "waiter queued", a.queued("job", 1))
		if got := testutil.ToFloat64(a.m.Waiters); got != 1 {
			t.Errorf("got waiters gauge %v, want 1", got)
		}
		if _, err := a.l.Release(context.Background(), "job", "a", 0); err != nil {
			t.Fatal(err)
		}
		resp := <-done
		v := decodeWaitAnswer(t, resp)
		if resp.StatusCode != http.StatusOK || v["acquired"] != true {
			t.Fatalf("got %d %v, want 200 acquired", resp.StatusCode, v)
		}
		if got := testutil.ToFloat64(a.m.Acquires.WithLabelValues("waited")); got != 1 {
			t.Errorf("got waited count %v, want 1", got)
		}
		if got := testutil.ToFloat64(a.m.Waiters); got != 0 {
			t.Errorf("got waiters gauge %v after the answer, want 0", got)
		}
	})

	t.Run("answers contended once wait_ms has passed", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Body.Close()
		start := time.Now()
		resp := a.post(context.Background(), "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":200}`)
		elapsed := time.Since(start)
		v := decodeWaitAnswer(t, resp)
		if resp.StatusCode != http.StatusOK || v["acquired"] != false || v["resource"] != "job" {
			t.Fatalf("got %d %v, want 200 contended", resp.StatusCode, v)
		}
		if ms, _ := v["retry_after_ms"].(float64); ms < 55000 || ms > 60000 {
			t.Errorf("got retry_after_ms %v, want the holder's remaining ~59800", v["retry_after_ms"])
		}
		if elapsed < 200*time.Millisecond {
			t.Errorf("got an answer after %v, want at least wait_ms (200ms)", elapsed)
		}
		if got := testutil.ToFloat64(a.m.Acquires.WithLabelValues("timed_out")); got != 1 {
			t.Errorf("got timed_out count %v, want 1", got)
		}
	})

	t.Run("a free resource is acquired at once and counted as acquired", func(t *testing.T) {
		a := newWaitAPI(t)
		resp := a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60,"wait_ms":5000}`)
		if v := decodeWaitAnswer(t, resp); v["acquired"] != true {
			t.Fatalf("got %v, want acquired", v)
		}
		if got := testutil.ToFloat64(a.m.Acquires.WithLabelValues("acquired")); got != 1 {
			t.Errorf("got acquired count %v, want 1", got)
		}
	})

	t.Run("a client that goes away is dropped at once", func(t *testing.T) {
		a := newWaitAPI(t)
		a.post(context.Background(), "/locks/job", `{"owner":"a","ttl_seconds":60}`).Body.Close()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan *http.Response, 1)
		go func() { done <- a.post(ctx, "/locks/job", `{"owner":"b","ttl_seconds":60,"wait_ms":30000}`) }()
		waitUntil(t, "waiter queued", a.queued("job", 1))
		cancel()
		select {
		case resp := <-done:
			resp.Body.Close()
			if resp.StatusCode != 499 {
				t.Errorf("got status %d, want 499 in the log", resp.StatusCode)
			}
		case <-time.After(time.Second):
			t.Fatal("the handler did not return within 1s of the client leaving")
		}
		if q := a.w.Queued(a.l, "job"); q != 0 {
			t.Errorf("got %d queued, want 0", q)
		}
		if got := testutil.ToFloat64(a.m.Acquires.WithLabelValues("abandoned")); got != 1 {
			t.Errorf("got abandoned count %v, want 1", got)
		}
	})

	t.Run("rejects wait_ms outside 0..max_wait_ms", func(t *testing.T) {
		a := newWaitAPI(t)
		for _, w := range []string{"-1", "30001", "1.5", `"100"`, "null", "1e3"} {
			resp := a.post(context.Background(), "/locks/job", fmt.Sprintf(`{"owner":"a","ttl_seconds":60,"wait_ms":%s}`, w))
			v := decodeWaitAnswer(t, resp)
			if resp.StatusCode != http.StatusUnprocessableEntity {
				t.Errorf("wait_ms %s: got %d %v, want 422", w, resp.StatusCode, v)
			}
		}
		if _, err := a.l.Status(context.Background(), "job"); err == nil {
			t.Error("a rejected request took the lock")
		}
	})
}
