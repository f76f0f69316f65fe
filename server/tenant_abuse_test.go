package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

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
				r := apptest.Do(t, h, http.MethodPost, lockPath, `{"ttl_seconds":60}`, authz(auth)...)
				var got attemptBody
				if r.StatusCode != http.StatusOK || json.Unmarshal(r.Raw, &got) != nil {
					t.Fatalf("attempt: got %d %s, want 200", r.StatusCode, r.Raw)
				}
				return got
			}
			for i := 1; i <= 5; i++ {
				if got := attempt(clientB); got.Attempts != i {
					t.Fatalf("b attempt %d: got attempts %d, want %d", i, got.Attempts, i)
				}
			}
			// b's user is now flagged in b; a sees nothing of it.
			if r := apptest.Do(t, h, http.MethodGet, "/abuse/flagged/"+url.PathEscape(user), "", authz(opsA)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a ops show: got %d %s, want 404", r.StatusCode, r.Raw)
			}
			r := apptest.Do(t, h, http.MethodGet, "/abuse/flagged?lock=login", "", authz(opsA)...)
			var list struct {
				Items []json.RawMessage `json:"items"`
			}
			if r.StatusCode != http.StatusOK || json.Unmarshal(r.Raw, &list) != nil || len(list.Items) != 0 {
				t.Errorf("a ops list: got %d %s, want 200 with no items", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, h, http.MethodDelete, "/abuse/flagged/"+url.PathEscape(user), "", authz(opsA)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a ops clear: got %d %s, want 404", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, h, http.MethodDelete, lockPath, "", authz(clientA)...); r.StatusCode != http.StatusNotFound {
				t.Errorf("a clears the user lock: got %d %s, want 404 (b's counter is not a's)", r.StatusCode, r.Raw)
			}
			// a's own counter starts at 1 and b's goes on from 5.
			if got := attempt(clientA); !got.Acquired || got.Attempts != 1 || got.Flagged {
				t.Errorf("a's first attempt: got %+v, want acquired, attempts 1, not flagged", got)
			}
			if got := attempt(clientB); got.Attempts != 6 || got.Acquired {
				t.Errorf("b's sixth attempt: got %+v, want attempts 6 (untouched by a)", got)
			}
			if r := apptest.Do(t, h, http.MethodDelete, lockPath, "", authz(clientA)...); r.StatusCode != http.StatusNoContent {
				t.Errorf("a clears its own user lock: got %d %s, want 204", r.StatusCode, r.Raw)
			}
			if r := apptest.Do(t, h, http.MethodDelete, lockPath, "", authz(clientB)...); r.StatusCode != http.StatusNoContent {
				t.Errorf("b clears its user lock: got %d %s, want 204", r.StatusCode, r.Raw)
			}
		})
	}
}

func TestUserLockTenantIsolation(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, be *redistest.Backend) {
		testUserLockTenantIsolation(t, authApp(t, be, nil, true).E)
	})
}
