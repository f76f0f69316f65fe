package handlers_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
)

type listJSON struct {
	Items []struct {
		lockJSON
		Waiters int `json:"waiters"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

type auditListJSON struct {
	Items []struct {
		At        string          `json:"at"`
		Actor     string          `json:"actor"`
		Action    string          `json:"action"`
		Target    string          `json:"target"`
		Reason    string          `json:"reason"`
		Details   json.RawMessage `json:"details"`
		RequestID string          `json:"request_id"`
	} `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// as is the X-Test-* headers of apptest.HeaderAuth.
func as(tenant, role, operator string) []string {
	return []string{"X-Test-Tenant", tenant, "X-Test-Role", role, "X-Test-Operator", operator}
}

func TestOperatorRoutesAreTenantIsolatedAndRefuseClientKeys(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "lg:", HeaderAuth: true, UserLocks: true})
	acme, globex := as("acme", "ops", "oncall"), as("globex", "ops", "night")
	app.Do(t, "POST", "/locks/checkin-1", `{"owner":"w1","ttl_seconds":60}`, acme...).Want(t, 200)
	app.Do(t, "POST", "/locks/checkin-2", `{"owner":"w2","ttl_seconds":60}`, globex...).Want(t, 200)

	var page listJSON
	app.Do(t, "GET", "/locks?prefix=checkin", "", acme...).JSON(t, 200, &page)
	if len(page.Items) != 1 || page.Items[0].Resource != "checkin-1" || page.Items[0].Owner != "w1" || page.NextCursor != nil {
		t.Errorf("acme's listing: got %+v, want only checkin-1", page)
	}
	app.Do(t, "DELETE", "/locks/checkin-2?force=true", `{"reason":"not yours"}`, acme...).Problem(t, 404, "not-found")
	if got := app.Do(t, "GET", "/locks/checkin-2", "", globex...); got.StatusCode != 200 {
		t.Errorf("globex's lock after acme's forced release: got %d, want it still held", got.StatusCode)
	}
	var released struct {
		Released lockJSON `json:"released"`
	}
	app.Do(t, "DELETE", "/locks/checkin-1?force=true", `{"reason":"w1 is wedged"}`, append(acme, "X-Request-Id", "req-42")...).JSON(t, 200, &released)
	if released.Released.Owner != "w1" {
		t.Errorf("got %+v, want w1's lease", released)
	}
	var banned struct {
		BannedUntil string `json:"banned_until"`
	}
	if err := json.Unmarshal(app.Do(t, "POST", "/abuse/bans/user-7", `{"seconds":600,"reason":"scripted"}`, acme...).Want(t, 201).Raw, &banned); err != nil {
		t.Fatal(err)
	}

	var trail auditListJSON
	app.Do(t, "GET", "/audit", "", acme...).JSON(t, 200, &trail)
	if len(trail.Items) != 2 {
		t.Fatalf("acme's audit trail: got %+v, want a ban and a forced release", trail)
	}
	ban, fr := trail.Items[0], trail.Items[1]
	if ban.Action != "ban" || ban.Target != "user:user-7" || ban.Actor != "oncall" || ban.Reason != "scripted" {
		t.Errorf("newest record: got %+v, want oncall's ban of user-7 with the reason as given", ban)
	}
	if got, want := string(ban.Details), `{"seconds":600,"until":"`+banned.BannedUntil+`"}`; got != want {
		t.Errorf("ban: got details %s, want %s", got, want)
	}
	if fr.Action != "force-release" || fr.Target != "lock:checkin-1" || fr.Actor != "oncall" || fr.Reason != "w1 is wedged" || fr.RequestID == "" || fr.At == "" {
		t.Errorf("forced release record: got %+v, want the reason as given", fr)
	}
	if got, want := string(fr.Details), fmt.Sprintf(`{"owner":"w1","token":%d}`, released.Released.Token); got != want {
		t.Errorf("forced release: got details %s, want %s", got, want)
	}
	app.Do(t, "GET", "/audit", "", globex...).JSON(t, 200, &trail)
	if len(trail.Items) != 0 {
		t.Errorf("globex's audit trail: got %+v, want none", trail)
	}

	client := as("acme", "client", "app")
	app.Do(t, "GET", "/locks", "", client...).Problem(t, 403, "forbidden")
	app.Do(t, "GET", "/audit", "", client...).Problem(t, 403, "forbidden")
	app.Do(t, "POST", "/locks/checkin-1", `{"owner":"w3","ttl_seconds":60}`, acme...).Want(t, 200)
	app.Do(t, "DELETE", "/locks/checkin-1?force=true", `{"reason":"x"}`, client...).Problem(t, 403, "forbidden")
	app.Do(t, "DELETE", "/locks/checkin-1?force=true", ``, acme...).Fields(t, "reason")
	app.Do(t, "DELETE", "/locks/checkin-1?force=true", `{"reason":"`+strings.Repeat("x", 501)+`"}`, acme...).Fields(t, "reason")
	app.Do(t, "DELETE", "/locks/checkin-1?force=true&owner=w3", `{"reason":"x"}`, acme...).Fields(t, "owner")
}

func TestTheAuditActorIsOpenInOpenMode(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "lg:"})
	app.Do(t, "POST", "/locks/r", `{"owner":"w1","ttl_seconds":60}`).Want(t, 200)
	app.Do(t, "DELETE", "/locks/r?force=true&reason=stuck", "").Want(t, 200)
	var trail auditListJSON
	app.Do(t, "GET", "/audit", "").JSON(t, 200, &trail)
	if len(trail.Items) != 1 || trail.Items[0].Actor != "open" {
		t.Errorf("got %+v, want one record by open", trail)
	}
}

func TestForceReleaseIsCountedByClassNeverByResource(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "lg:"})
	app.Metrics.SetLockClasses([]string{"checkin:"})
	app.Do(t, "POST", "/locks/checkin:user-42", `{"owner":"w1","ttl_seconds":60}`).Want(t, 200)
	app.Do(t, "POST", "/locks/checkin:user-42", `{"owner":"w2","ttl_seconds":60}`).Want(t, 200)
	app.Do(t, "DELETE", "/locks/checkin:user-42?force=true&reason=stuck", "").Want(t, 200)
	out := apptest.Do(t, app.Metrics.Handler(), "GET", "/metrics", "")
	body := string(out.Raw)
	for _, want := range []string{
		`leasegate_lock_force_releases_total{class="checkin:"} 1`,
		`leasegate_lock_contended_acquires_total{class="checkin:"} 1`,
		`leasegate_lock_wait_seconds_count{class="checkin:"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "user-42") {
		t.Errorf("/metrics names a resource")
	}
}

// sse reads the events of one stream.
type sse struct {
	res *http.Response
	sc  *bufio.Scanner
}

func openEvents(t *testing.T, srv *httptest.Server, ctx context.Context, resource string) *sse {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/locks/"+resource+"/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("got %d %q, want 200 text/event-stream", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return &sse{res: res, sc: bufio.NewScanner(res.Body)}
}

// next returns the next event's name and data; comments are returned
// as name ":".
func (s *sse) next(t *testing.T) (string, string) {
	t.Helper()
	name, data := "", ""
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, ":"):
			return ":", line
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("the stream ended: %v", s.sc.Err())
	return "", ""
}

// event skips heartbeats.
func (s *sse) event(t *testing.T) (string, map[string]any) {
	t.Helper()
	for {
		name, data := s.next(t)
		if name == ":" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(data), &v); err != nil && data != "null" {
			t.Fatalf("event %s: data %q is not JSON", name, data)
		}
		return name, v
	}
}

func TestLockEventsFollowALease(t *testing.T) {
	t.Parallel()
	cfg := handlers.DefaultConfig()
	cfg.EventsHeartbeat = 30 * time.Millisecond
	app := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:", Wait: true, Config: &cfg})
	srv := httptest.NewServer(app.E)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	s := openEvents(t, srv, ctx, "job")
	if name, v := s.event(t); name != "state" || v != nil {
		t.Fatalf("first event: got %s %v, want state null", name, v)
	}
	want := func(kind, owner string) map[string]any {
		t.Helper()
		name, v := s.event(t)
		if name != kind || v["owner"] != owner || v["at"] == nil || v["token"] == nil {
			t.Fatalf("got %s %v, want %s of %s with LOCK and at", name, v, kind, owner)
		}
		return v
	}
	lk, err := app.Locks.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "job", Owner: "w1", TTL: time.Minute})
	if err != nil || !lk.Acquired {
		t.Fatal(err)
	}
	want("acquired", "w1")
	if _, err := app.Locks.Renew(ctx, "", "job", "w1", 0, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	want("renewed", "w1")
	if _, err := app.Locks.Release(ctx, "", "job", "w1", 0); err != nil {
		t.Fatal(err)
	}
	want("released", "w1")
	app.Do(t, "POST", "/locks/job", `{"owner":"w2","ttl_seconds":60}`).Want(t, 200)
	want("acquired", "w2")
	app.Do(t, "DELETE", "/locks/job?force=true&reason=test", "").Want(t, 200)
	want("force-released", "w2")
	// An expiry is reported within 1 s of expires_at.
	app.Do(t, "POST", "/locks/job", `{"owner":"w3","ttl_seconds":1}`).Want(t, 200)
	v := want("acquired", "w3")
	exp, _ := time.Parse(time.RFC3339, v["expires_at"].(string))
	want("expired", "w3")
	if late := time.Since(exp); late > time.Second {
		t.Errorf("expiry reported %v after expires_at, want within 1 s", late)
	}
	// Heartbeats keep an idle stream open.
	for {
		if name, _ := s.next(t); name == ":" {
			break
		}
	}
}

// TestLockEventStreamsEndWithTheirClients: watchers disconnect at any
// point; each leaves nothing behind (goroutines, registrations, its entry
// among the resource's waiters). Not parallel: it counts the process's
// goroutines.
func TestLockEventStreamsEndWithTheirClients(t *testing.T) {
	app := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:", Wait: true})
	srv := httptest.NewServer(app.E)
	t.Cleanup(srv.Close)
	waiters := keyspace.Space{Prefix: "lg:"}.Resource("", "hot").Waiters()
	before := runtime.NumGoroutine()
	for round := 0; round < 3; round++ {
		var cancels []context.CancelFunc
		for i := 0; i < 20; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			s := openEvents(t, srv, ctx, "hot")
			if name, _ := s.event(t); name != "state" {
				t.Fatalf("got %s first, want state", name)
			}
		}
		if n := app.Waiter.Watched(); n != 20 {
			t.Errorf("round %d: %d watchers registered, want 20", round, n)
		}
		if n := app.Backend.RDB.HLen(context.Background(), waiters).Val(); n != 20 {
			t.Errorf("round %d: %d entries among the waiters, want 20", round, n)
		}
		for _, c := range cancels {
			c()
		}
		apptest.WaitFor(t, "every watcher has gone", func() bool { return app.Waiter.Watched() == 0 })
		apptest.WaitFor(t, "the waiters key is gone", func() bool {
			return app.Backend.RDB.Exists(context.Background(), waiters).Val() == 0
		})
	}
	http.DefaultClient.CloseIdleConnections()
	srv.CloseClientConnections()
	apptest.WaitFor(t, "the goroutines are back", func() bool { return runtime.NumGoroutine() <= before+2 })
}

func TestLockEventsAreTenantIsolated(t *testing.T) {
	t.Parallel()
	app := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:", Wait: true, HeaderAuth: true})
	srv := httptest.NewServer(app.E)
	t.Cleanup(srv.Close)
	app.Do(t, "POST", "/locks/shared-name", `{"owner":"globex-worker","ttl_seconds":60}`, as("globex", "client", "app")...).Want(t, 200)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/locks/shared-name/events", nil)
	for i, h := 0, as("acme", "client", "app"); i < len(h); i += 2 {
		req.Header.Set(h[i], h[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	s := &sse{res: res, sc: bufio.NewScanner(res.Body)}
	if name, v := s.event(t); name != "state" || v != nil {
		t.Errorf("acme watching shared-name: got %s %v, want state null (globex's lock is not acme's)", name, v)
	}
}
