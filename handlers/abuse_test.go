package handlers_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// newAbuseEnv is the routes with user locks under pol, the caller told
// by the X-Test-* headers (apptest.HeaderAuth).
func newAbuseEnv(t *testing.T, pol abuse.Policies) *apptest.App {
	t.Helper()
	return apptest.NewApp(t, redistest.OnMini(t), apptest.Options{UserLocks: true, Policies: pol, HeaderAuth: true})
}

func TestUserLockRoutes(t *testing.T) {
	t.Parallel()
	env := newAbuseEnv(t, abuse.DefaultPolicies())

	t.Run("attempts count up, only the first acquires, the fifth flags", func(t *testing.T) {
		for i := 1; i <= 6; i++ {
			a := env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 60}`).Want(t, 200)
			if got := a.Object["attempts"]; got != float64(i) {
				t.Errorf("attempt %d: got attempts %v", i, got)
			}
			if got := a.Object["acquired"]; got != (i == 1) {
				t.Errorf("attempt %d: got acquired %v, want %v", i, got, i == 1)
			}
			if got := a.Object["flagged"]; got != (i >= 5) {
				t.Errorf("attempt %d: got flagged %v, want %v", i, got, i >= 5)
			}
			if got, want := a.Object["expires_at"], "2026-11-30T09:31:00.000Z"; got != want {
				t.Errorf("attempt %d: got expires_at %v, want %v", i, got, want)
			}
		}
	})

	t.Run("the body is optional and ttl defaults to 10 seconds", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/bob", "").Want(t, 200)
		if got, want := a.Object["expires_at"], "2026-11-30T09:30:10.000Z"; got != want {
			t.Errorf("got expires_at %v, want %v", got, want)
		}
	})

	t.Run("delete releases the user lock, then there is nothing to delete", func(t *testing.T) {
		env.Do(t, "POST", "/user-locks/login/carol", "").Want(t, 200)
		env.Do(t, "DELETE", "/user-locks/login/carol", "").Want(t, 204)
		env.Do(t, "DELETE", "/user-locks/login/carol", "").Want(t, 404).Slug(t, "not-found")
		a := env.Do(t, "POST", "/user-locks/login/carol", "").Want(t, 200)
		if a.Object["acquired"] != true {
			t.Errorf("got acquired %v after delete, want true", a.Object["acquired"])
		}
	})

	t.Run("user ids are percent-decoded and any printable id works", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/d%C3%BC%2Fx%20y", "").Want(t, 200)
		if a.Object["acquired"] != true {
			t.Errorf("got %v", a.Object)
		}
		env.Do(t, "DELETE", "/user-locks/login/d%C3%BC%2Fx%20y", "").Want(t, 204)
	})

	bad := []struct {
		name, target, body, field string
	}{
		{"an empty-looking user id", "/user-locks/login/%20%20", "", "user_id"},
		{"a user id with a newline", "/user-locks/login/a%0Ab", "", "user_id"},
		{"a user id with an ANSI escape", "/user-locks/login/%1B%5B31m", "", "user_id"},
		{"a user id over 128 bytes", "/user-locks/login/" + strings.Repeat("u", 129), "", "user_id"},
		{"a lock name with a space", "/user-locks/lo%20gin/alice", "", "name"},
		{"a lock name with a colon", "/user-locks/a:b/alice", "", "name"},
		{"a lock name over 64 bytes", "/user-locks/" + strings.Repeat("n", 65) + "/alice", "", "name"},
		{"a fractional ttl", "/user-locks/login/eve", `{"ttl_seconds": 60.5}`, "ttl_seconds"},
		{"a ttl written 60.0", "/user-locks/login/eve", `{"ttl_seconds": 60.0}`, "ttl_seconds"},
		{"an exponent ttl", "/user-locks/login/eve", `{"ttl_seconds": 1e3}`, "ttl_seconds"},
		{"a string ttl", "/user-locks/login/eve", `{"ttl_seconds": "10"}`, "ttl_seconds"},
		{"a null ttl", "/user-locks/login/eve", `{"ttl_seconds": null}`, "ttl_seconds"},
		{"a zero ttl", "/user-locks/login/eve", `{"ttl_seconds": 0}`, "ttl_seconds"},
		{"a ttl over max_ttl", "/user-locks/login/eve", `{"ttl_seconds": 86401}`, "ttl_seconds"},
		{"an unknown field", "/user-locks/login/eve", `{"ttl": 10}`, "ttl"},
		{"a query parameter", "/user-locks/login/eve?x=1", "", "x"},
	}
	for _, tc := range bad {
		t.Run("rejects "+tc.name+" and counts nothing", func(t *testing.T) {
			a := env.Do(t, "POST", tc.target, tc.body).Want(t, 422)
			a.Slug(t, "validation")
			errs, _ := a.Object["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != tc.field {
				t.Errorf("got errors %v, want one naming %q", a.Object["errors"], tc.field)
			}
		})
	}
	t.Run("nothing was counted for eve by the rejected requests", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/eve", "").Want(t, 200)
		if a.Object["attempts"] != float64(1) {
			t.Errorf("got attempts %v, want 1", a.Object["attempts"])
		}
	})

	t.Run("malformed JSON is 400 and a non-JSON body is 415", func(t *testing.T) {
		env.Do(t, "POST", "/user-locks/login/frank", `{"ttl_seconds":`).Want(t, 400).Slug(t, "malformed-request")
		env.Do(t, "POST", "/user-locks/login/frank", `ttl=3`, "Content-Type", "text/plain").Want(t, 415)
	})

	t.Run("a wrong method is 405 with Allow", func(t *testing.T) {
		a := env.Do(t, "PUT", "/user-locks/login/alice", "").Want(t, 405)
		if !strings.Contains(a.Header.Get("Allow"), "POST") {
			t.Errorf("got Allow %q, want POST in it", a.Header.Get("Allow"))
		}
	})

	t.Run("redis down is 503 and never acquired", func(t *testing.T) {
		env.Backend.Mini.SetError("LOADING")
		defer env.Backend.Mini.SetError("")
		a := env.Do(t, "POST", "/user-locks/login/gina", "").Want(t, 503)
		a.Slug(t, "unavailable")
		if a.Header.Get("Retry-After") == "" {
			t.Error("got no Retry-After on 503")
		}
	})
}

func TestAbuseLogRecordFromHTTP(t *testing.T) {
	t.Parallel()
	env := newAbuseEnv(t, abuse.DefaultPolicies())
	var reqID string
	for i := 0; i < 5; i++ {
		req := httptest.NewRequest("POST", "/user-locks/login/mallory", nil)
		req.RemoteAddr = "192.0.2.10:4711"
		req.Header.Set("X-Forwarded-For", "203.0.113.66")
		reqID = apptest.Serve(env.E, req).Want(t, 200).Header.Get(echo.HeaderXRequestID)
	}
	recs := env.AbuseLog.Events(t, "flagged")
	if len(recs) != 1 {
		t.Fatalf("got %d flagged records, want 1", len(recs))
	}
	r := recs[0]
	if r["client_ip"] != "192.0.2.10" {
		t.Errorf("got client_ip %v, want the connection's 192.0.2.10 (X-Forwarded-For is not trusted by default)", r["client_ip"])
	}
	if r["request_id"] != reqID {
		t.Errorf("got request_id %v, want %v (the fifth request's)", r["request_id"], reqID)
	}
	if r["window_start"] != "2026-11-30T09:30:00.000Z" || r["window_end"] != "2026-11-30T09:30:10.000Z" {
		t.Errorf("got window %v..%v", r["window_start"], r["window_end"])
	}
}

func TestOpsReviewRoutes(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 2
	pol.Allowlist["probe"] = true
	env := newAbuseEnv(t, pol)
	flag := func(t *testing.T, lock, user string, hdr ...string) {
		t.Helper()
		for i := 0; i < 2; i++ {
			env.Do(t, "POST", "/user-locks/"+lock+"/"+user, "", hdr...).Want(t, 200)
		}
	}
	tick := func() {
		env.Backend.SetTime(env.Backend.Now().Add(time.Millisecond))
	}
	flag(t, "login", "u1")
	tick()
	flag(t, "export", "u2")
	tick()
	flag(t, "login", "u3")

	t.Run("the list pages newest first with a cursor", func(t *testing.T) {
		a := env.Do(t, "GET", "/abuse/flagged?limit=2", "").Want(t, 200)
		items := a.Object["items"].([]any)
		if len(items) != 2 || items[0].(map[string]any)["user_id"] != "u3" || items[1].(map[string]any)["user_id"] != "u2" {
			t.Fatalf("got %v, want u3, u2", items)
		}
		first := items[0].(map[string]any)
		for _, f := range []string{"lock", "times_flagged", "peak_attempts", "first_flagged_at", "last_flagged_at", "banned_until"} {
			if _, ok := first[f]; !ok {
				t.Errorf("FLAG has no %s: %v", f, first)
			}
		}
		if first["banned_until"] != nil {
			t.Errorf("got banned_until %v, want null", first["banned_until"])
		}
		cur, ok := a.Object["next_cursor"].(string)
		if !ok || cur == "" {
			t.Fatalf("got next_cursor %v, want one", a.Object["next_cursor"])
		}
		b := env.Do(t, "GET", "/abuse/flagged?limit=2&cursor="+cur, "").Want(t, 200)
		items = b.Object["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["user_id"] != "u1" {
			t.Errorf("got %v, want u1", items)
		}
		if b.Object["next_cursor"] != nil {
			t.Errorf("got next_cursor %v on the last page, want null", b.Object["next_cursor"])
		}
	})

	t.Run("the list filters by lock", func(t *testing.T) {
		a := env.Do(t, "GET", "/abuse/flagged?lock=export", "").Want(t, 200)
		items := a.Object["items"].([]any)
		if len(items) != 1 || items[0].(map[string]any)["user_id"] != "u2" {
			t.Errorf("got %v, want only u2", items)
		}
	})

	for _, q := range []string{"limit=0", "limit=501", "limit=1.5", "lock=a%20b", "cursor=%21%21", "sort=asc", "limit=1&limit=2"} {
		t.Run("the list rejects "+q, func(t *testing.T) {
			env.Do(t, "GET", "/abuse/flagged?"+q, "").Want(t, 422).Slug(t, "validation")
		})
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=1.5", "limit=x", "limit=1&limit=2", "sort=asc"} {
		t.Run("the webhook status rejects "+q, func(t *testing.T) {
			env.Do(t, "GET", "/abuse/webhooks?"+q, "").Want(t, 422).Slug(t, "validation")
		})
	}

	t.Run("one user's flags, and 404 for a clean user", func(t *testing.T) {
		a := env.Do(t, "GET", "/abuse/flagged/u1", "").Want(t, 200)
		if flags := a.Object["flags"].([]any); len(flags) != 1 || a.Object["user_id"] != "u1" {
			t.Errorf("got %v", a.Object)
		}
		env.Do(t, "GET", "/abuse/flagged/nobody", "").Want(t, 404).Slug(t, "not-found")
	})

	t.Run("a ban answers 429 with Retry-After and shows in the flag", func(t *testing.T) {
		a := env.Do(t, "POST", "/abuse/bans/u1", `{"seconds": 90, "reason": "scripted logins"}`).Want(t, 201)
		if a.Object["banned_until"] != "2026-11-30T09:31:30.002Z" {
			t.Errorf("got banned_until %v", a.Object["banned_until"])
		}
		b := env.Do(t, "POST", "/user-locks/login/u1", "").Want(t, 429)
		b.Slug(t, "abnormal-usage-detected")
		if got := b.Header.Get("Retry-After"); got != "90" {
			t.Errorf("got Retry-After %q, want 90", got)
		}
		f := env.Do(t, "GET", "/abuse/flagged/u1", "").Want(t, 200)
		if got := f.Object["flags"].([]any)[0].(map[string]any)["banned_until"]; got != "2026-11-30T09:31:30.002Z" {
			t.Errorf("got banned_until %v in the flag", got)
		}
		env.Do(t, "DELETE", "/abuse/bans/u1", "").Want(t, 204)
		env.Do(t, "DELETE", "/abuse/bans/u1", "").Want(t, 404)
		env.Do(t, "POST", "/user-locks/login/u1", "").Want(t, 200)
	})

	bans := map[string]string{
		"no seconds":        `{"reason": "x"}`,
		"zero seconds":      `{"seconds": 0}`,
		"over a year":       `{"seconds": 31536001}`,
		"a string seconds":  `{"seconds": "60"}`,
		"a long reason":     `{"seconds": 60, "reason": "` + strings.Repeat("r", 257) + `"}`,
		"a control reason":  `{"seconds": 60, "reason": "a\nb"}`,
		"an unknown field":  `{"seconds": 60, "until": 5}`,
		"a non-string note": `{"seconds": 60, "reason": 5}`,
	}
	for name, body := range bans {
		t.Run("a ban with "+name+" is 422", func(t *testing.T) {
			env.Do(t, "POST", "/abuse/bans/u2", body).Want(t, 422).Slug(t, "validation")
		})
	}
	t.Run("an allowlisted user cannot be banned", func(t *testing.T) {
		env.Do(t, "POST", "/abuse/bans/probe", `{"seconds": 60}`).Want(t, 422)
	})

	t.Run("clearing writes an audit record naming the operator and sticks", func(t *testing.T) {
		env.Do(t, "DELETE", "/abuse/flagged/u3", "", "X-Test-Operator", "key:oncall").Want(t, 204)
		env.Do(t, "DELETE", "/abuse/flagged/u3", "").Want(t, 404)
		env.Do(t, "POST", "/user-locks/login/u3", "").Want(t, 200)
		env.Do(t, "GET", "/abuse/flagged/u3", "").Want(t, 404)
		recs := env.AbuseLog.Events(t, "flags_cleared")
		if len(recs) != 1 || recs[0]["operator"] != "key:oncall" || recs[0]["user_id"] != "u3" {
			t.Errorf("got audit %v, want one for u3 by key:oncall", recs)
		}
		bans := env.AbuseLog.Events(t, "banned")
		if len(bans) != 1 || bans[0]["operator"] != leasegate.OpenModeActor {
			t.Errorf("got ban audit %v, want one by %q", bans, leasegate.OpenModeActor)
		}
	})

	t.Run("a client key may not use the ops routes", func(t *testing.T) {
		env.Do(t, "GET", "/abuse/flagged", "", "X-Test-Role", "client").Want(t, 403).Slug(t, "forbidden")
		env.Do(t, "POST", "/abuse/bans/u2", `{"seconds": 5}`, "X-Test-Role", "client").Want(t, 403)
		env.Do(t, "POST", "/user-locks/login/zed", "", "X-Test-Role", "client").Want(t, 200)
	})

	t.Run("tenants with colliding names never see each other", func(t *testing.T) {
		flag(t, "login", "u1", "X-Test-Tenant", "acme")
		a := env.Do(t, "POST", "/user-locks/login/u2", "", "X-Test-Tenant", "globex").Want(t, 200)
		if a.Object["attempts"] != float64(1) {
			t.Errorf("got attempts %v in globex, want 1", a.Object["attempts"])
		}
		l := env.Do(t, "GET", "/abuse/flagged", "", "X-Test-Tenant", "globex").Want(t, 200)
		if items := l.Object["items"].([]any); len(items) != 0 {
			t.Errorf("got %v in globex's list, want none", items)
		}
		env.Do(t, "GET", "/abuse/flagged/u1", "", "X-Test-Tenant", "globex").Want(t, 404)
		env.Do(t, "DELETE", "/abuse/flagged/u1", "", "X-Test-Tenant", "globex").Want(t, 404)
		acme := env.Do(t, "GET", "/abuse/flagged", "", "X-Test-Tenant", "acme").Want(t, 200)
		if items := acme.Object["items"].([]any); len(items) != 1 {
			t.Errorf("got %d items in acme's list, want 1", len(items))
		}
	})
}

func TestConcurrentUserLockRequests(t *testing.T) {
	t.Parallel()
	// On redis-server, whose atomicity is the one that counts: miniredis
	// runs the 200 scripts one at a time in gopher-lua, and on a loaded
	// machine (go test -p 4 on 2 cores) the last of them ran past the
	// 5 s request timeout and were answered 503.
	env := apptest.NewApp(t, redistest.OnRedis(t), apptest.Options{UserLocks: true, Policies: abuse.DefaultPolicies(), HeaderAuth: true})
	const n = 200
	got := make([]*apptest.Answer, n)
	redistest.Burst(n, func(i int) {
		got[i] = apptest.Serve(env.E, httptest.NewRequest("POST", "/user-locks/burst/u-http", nil))
	})
	seen := map[float64]int{}
	acquired := 0
	for _, a := range got {
		if a.StatusCode != 200 {
			t.Fatalf("got %d: %s", a.StatusCode, a.Raw)
		}
		seen[a.Object["attempts"].(float64)]++
		if a.Object["acquired"] == true {
			acquired++
		}
	}
	for i := 1; i <= n; i++ {
		if seen[float64(i)] != 1 {
			t.Errorf("attempts %d seen %d times, want once", i, seen[float64(i)])
		}
	}
	if acquired != 1 {
		t.Errorf("got %d acquired, want 1", acquired)
	}
	if recs := env.AbuseLog.Events(t, "flagged"); len(recs) != 1 {
		t.Errorf("got %d abuse-log records, want 1", len(recs))
	}
}

func TestBacktestRoute(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.AttemptLogMaxEntries = 1000
	env := newAbuseEnv(t, pol)
	for range 4 {
		env.Do(t, "POST", "/user-locks/login/alice", "").Want(t, 200)
	}
	env.Do(t, "POST", "/user-locks/login/bob", "").Want(t, 200)

	t.Run("answers what a candidate would have flagged", func(t *testing.T) {
		var bt leasegate.Backtest
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "policy": {"max_attempts": 3}, "since": "2026-11-30T09:00:00Z", "users": ["alice", "bob"]}`).JSON(t, 200, &bt)
		if bt.Recorded.Attempts != 5 || bt.NewlyFlagged.Count != 1 || bt.NewlyFlagged.Users[0].UserID != "alice" || len(bt.NewlyFlagged.Users[0].AttemptsAt) != 4 {
			t.Errorf("got %+v, want 5 attempts and alice newly flagged with her 4 attempt times", bt)
		}
	})
	t.Run("bad input is a 422 naming the field", func(t *testing.T) {
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "nope"}`).Want(t, 422).Fields(t, "lock")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "policy": {"max_attempts": 0}}`).Want(t, 422).Fields(t, "policy.max_attempts")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "since": "2026-11-28T00:00:00Z"}`).Want(t, 422).Fields(t, "since")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "since": "yesterday"}`).Want(t, 422).Fields(t, "since")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "policy": 3}`).Want(t, 422).Fields(t, "policy")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "users": "alice"}`).Want(t, 422).Fields(t, "users")
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login", "extra": 1}`).Want(t, 422).Fields(t, "extra")
	})
	t.Run("it is for the ops role", func(t *testing.T) {
		env.Do(t, "POST", "/abuse/backtest", `{"lock": "login"}`, "X-Test-Role", "client").Want(t, 403)
	})
	t.Run("with the log off it is a 422 on lock", func(t *testing.T) {
		pol := abuse.DefaultPolicies()
		pol.AttemptLogMaxEntries = 0
		off := newAbuseEnv(t, pol)
		off.Do(t, "POST", "/abuse/backtest", `{"lock": "login"}`).Want(t, 422).Fields(t, "lock")
	})
}
