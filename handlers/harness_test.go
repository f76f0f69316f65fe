package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/logbuf"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// epoch is the miniredis clock's start, so timestamps are exact.
var epoch = time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)

// harness is the gateway's routes on a miniredis whose clock the test
// moves, with the request log captured.
type harness struct {
	e     *echo.Echo
	mini  *miniredis.Miniredis
	rdb   *redis.Client
	locks *redislock.Locker
	logs  *logbuf.Buffer
	now   time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	m := miniredis.RunT(t)
	m.SetTime(epoch)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	h := newHarnessOn(t, rdb)
	h.mini = m
	return h
}

// newRealHarness runs the routes on a real redis-server (its clock is not
// the test's: advance and mini are unusable).
func newRealHarness(t *testing.T) *harness {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 128})
	t.Cleanup(func() { _ = rdb.Close() })
	return newHarnessOn(t, rdb)
}

func newHarnessOn(t *testing.T, rdb *redis.Client) *harness {
	t.Helper()
	locks := redislock.New(rdb, redislock.Options{Prefix: "lg:"})
	logs := &logbuf.Buffer{}
	log := zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(logs), zapcore.DebugLevel))
	e := handlers.New(handlers.DefaultConfig(), handlers.Deps{
		Locks: redislock.NewService(locks, nil, 0),
		Log:   log,
		Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	})
	return &harness{e: e, rdb: rdb, locks: locks, logs: logs, now: epoch}
}

// advance moves the Redis clock (TIME) and its TTLs forward by d.
func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.mini.SetTime(h.now)
	h.mini.FastForward(d)
}

// do sends one request through e.ServeHTTP, so every middleware runs. A
// non-empty body is sent as application/json unless hdr sets a
// Content-Type; hdr is name, value pairs.
func (h *harness) do(t *testing.T, method, target, body string, hdr ...string) *http.Response {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, req)
	return rec.Result()
}

func (h *harness) acquire(t *testing.T, resource, owner string, ttlSeconds int) lockJSON {
	t.Helper()
	res := h.do(t, http.MethodPost, "/locks/"+resource, `{"owner":`+quote(owner)+`,"ttl_seconds":`+itoa(ttlSeconds)+`}`)
	var got acquireJSON
	decodeJSON(t, res, http.StatusOK, &got)
	if !got.Acquired || got.Lock == nil {
		t.Fatalf("acquire %s by %q: got %+v, want acquired", resource, owner, got)
	}
	return *got.Lock
}

// status returns the lock shown by GET, or nil on a 404.
func (h *harness) status(t *testing.T, resource string) *lockJSON {
	t.Helper()
	res := h.do(t, http.MethodGet, "/locks/"+resource, "")
	if res.StatusCode == http.StatusNotFound {
		checkProblem(t, res, http.StatusNotFound, "not-found")
		return nil
	}
	var got heldJSON
	decodeJSON(t, res, http.StatusOK, &got)
	return &got.Lock
}

type lockJSON struct {
	Resource   string `json:"resource"`
	Owner      string `json:"owner"`
	Token      int64  `json:"token"`
	AcquiredAt string `json:"acquired_at"`
	ExpiresAt  string `json:"expires_at"`
}

type acquireJSON struct {
	Acquired     bool      `json:"acquired"`
	Lock         *lockJSON `json:"lock"`
	Resource     string    `json:"resource"`
	RetryAfterMS *int64    `json:"retry_after_ms"`
}

type heldJSON struct {
	Lock lockJSON `json:"lock"`
}

type problemJSON struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// decodeJSON checks status and the JSON content type, then decodes the
// body strictly into v.
func decodeJSON(t *testing.T, res *http.Response, status int, v any) {
	t.Helper()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("got status %d (%s), want %d", res.StatusCode, body, status)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("got Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
}

// checkProblem asserts res is an RFC 9457 problem with status and slug,
// and returns it.
func checkProblem(t *testing.T, res *http.Response, status int, slug string) problemJSON {
	t.Helper()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("got status %d (%s), want %d", res.StatusCode, body, status)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("got Content-Type %q, want application/problem+json", ct)
	}
	var p problemJSON
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decoding problem %s: %v", body, err)
	}
	if want := leasegate.ProblemBase + slug; p.Type != want {
		t.Errorf("got type %q, want %q", p.Type, want)
	}
	if p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("got problem %+v, want status %d with a title and a detail", p, status)
	}
	return p
}

// checkFields asserts a 422 validation problem naming exactly fields.
func checkFields(t *testing.T, res *http.Response, fields ...string) problemJSON {
	t.Helper()
	p := checkProblem(t, res, http.StatusUnprocessableEntity, "validation")
	var got []string
	for _, e := range p.Errors {
		if e.Message == "" {
			t.Errorf("field %q has no message", e.Field)
		}
		got = append(got, e.Field)
	}
	if strings.Join(got, ",") != strings.Join(fields, ",") {
		t.Errorf("got invalid fields %q, want %q", got, fields)
	}
	return p
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
