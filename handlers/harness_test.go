package handlers_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// epoch is the miniredis clock's start, so timestamps are exact.
var epoch = redistest.Epoch

// harness is the gateway's lock routes (apptest.App) with the lock
// helpers of these tests.
type harness struct{ *apptest.App }

// newHarness runs the routes on a miniredis whose clock the test moves,
// with the request log captured.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Prefix: "lg:"})}
}

// newRealHarness runs the routes on a real redis-server (its clock is not
// the test's: Advance and Mini are unusable).
func newRealHarness(t *testing.T) *harness {
	t.Helper()
	return &harness{apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{Prefix: "lg:"})}
}

func (h *harness) acquire(t *testing.T, resource, owner string, ttlSeconds int) lockJSON {
	t.Helper()
	res := h.Do(t, http.MethodPost, "/locks/"+resource, `{"owner":`+quote(owner)+`,"ttl_seconds":`+itoa(ttlSeconds)+`}`)
	var got acquireJSON
	res.JSON(t, http.StatusOK, &got)
	if !got.Acquired || got.Lock == nil {
		t.Fatalf("acquire %s by %q: got %+v, want acquired", resource, owner, got)
	}
	return *got.Lock
}

// status returns the lock shown by GET, or nil on a 404.
func (h *harness) status(t *testing.T, resource string) *lockJSON {
	t.Helper()
	res := h.Do(t, http.MethodGet, "/locks/"+resource, "")
	if res.StatusCode == http.StatusNotFound {
		res.Problem(t, http.StatusNotFound, "not-found")
		return nil
	}
	var got heldJSON
	res.JSON(t, http.StatusOK, &got)
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

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
