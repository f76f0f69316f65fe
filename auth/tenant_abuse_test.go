package auth

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// abuseGateway is gateway() with user locks and the ops review on.
func abuseGateway(t *testing.T, rdb redis.UniversalClient) *echo.Echo {
	t.Helper()
	kr, err := New(testKeys(t), nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	svc := abuse.New(rdb, abuse.Options{Prefix: "lg:"})
	return handlers.New(handlers.DefaultConfig(), handlers.Deps{
		Locks:     redislock.NewService(redislock.New(rdb, redislock.Options{Prefix: "lg:"}), nil, 0),
		UserLocks: svc,
		Flags:     svc,
		Auth:      kr,
	})
}

type attemptBody struct {
	Acquired bool `json:"acquired"`
	Attempts int  `json:"attempts"`
	Flagged  bool `json:"flagged"`
}

// testUserLockTenantIsolation: tenant b's counters and flags are invisible
// to tenant a's client and ops keys, for user ids chosen to collide with
// b's keys, and nothing a does changes them.
func testUserLockTenantIsolation(t *testing.T, h *echo.Echo) {
	const clientA, clientB, opsA = "Bearer " + keyClientA, "Bearer " + keyClientB, "Bearer " + keyOpsA
	for _, user := range collidingNames {
		t.Run("tenant a cannot see, count into or clear tenant b's user "+quoted(user), func(t *testing.T) {
			lockPath := "/user-locks/login/" + url.PathEscape(user)
			attempt := func(auth string) attemptBody {
				t.Helper()
				r := do(t, h, http.MethodPost, lockPath, auth, `{"ttl_seconds":60}`)
				var got attemptBody
				if r.status != http.StatusOK || json.Unmarshal(r.body, &got) != nil {
					t.Fatalf("attempt: got %d %s, want 200", r.status, r.body)
				}
				return got
			}
			for i := 1; i <= 5; i++ {
				if got := attempt(clientB); got.Attempts != i {
					t.Fatalf("b attempt %d: got attempts %d, want %d", i, got.Attempts, i)
				}
			}
			// b's user is now flagged in b; a sees nothing of it.
			if r := do(t, h, http.MethodGet, "/abuse/flagged/"+url.PathEscape(user), opsA, ""); r.status != http.StatusNotFound {
				t.Errorf("a ops show: got %d %s, want 404", r.status, r.body)
			}
			r := do(t, h, http.MethodGet, "/abuse/flagged?lock=login", opsA, "")
			var list struct {
				Items []json.RawMessage `json:"items"`
			}
			if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Items) != 0 {
				t.Errorf("a ops list: got %d %s, want 200 with no items", r.status, r.body)
			}
			if r := do(t, h, http.MethodDelete, "/abuse/flagged/"+url.PathEscape(user), opsA, ""); r.status != http.StatusNotFound {
				t.Errorf("a ops clear: got %d %s, want 404", r.status, r.body)
			}
			if r := do(t, h, http.MethodDelete, lockPath, clientA, ""); r.status != http.StatusNotFound {
				t.Errorf("a clears the user lock: got %d %s, want 404 (b's counter is not a's)", r.status, r.body)
			}
			// a's own counter starts at 1 and b's goes on from 5.
			if got := attempt(clientA); !got.Acquired || got.Attempts != 1 || got.Flagged {
				t.Errorf("a's first attempt: got %+v, want acquired, attempts 1, not flagged", got)
			}
			if got := attempt(clientB); got.Attempts != 6 || got.Acquired {
				t.Errorf("b's sixth attempt: got %+v, want attempts 6 (untouched by a)", got)
			}
			if r := do(t, h, http.MethodDelete, lockPath, clientA, ""); r.status != http.StatusNoContent {
				t.Errorf("a clears its own user lock: got %d %s, want 204", r.status, r.body)
			}
			if r := do(t, h, http.MethodDelete, lockPath, clientB, ""); r.status != http.StatusNoContent {
				t.Errorf("b clears its user lock: got %d %s, want 204", r.status, r.body)
			}
		})
	}
}

func TestUserLockTenantIsolation(t *testing.T) {
	t.Run("on miniredis", func(t *testing.T) {
		m := miniredis.RunT(t)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		testUserLockTenantIsolation(t, abuseGateway(t, rdb))
	})
	t.Run("on redis-server", func(t *testing.T) {
		rdb := redistest.Start(t).Client(t)
		testUserLockTenantIsolation(t, abuseGateway(t, rdb))
	})
}
