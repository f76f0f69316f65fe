package handlers_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// Every answer of POST /user-locks/{name}/{user_id} carries the IETF
// RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10):
// the policy (max_attempts, window) and what is left (attempts before the
// flag, seconds until the window ends), bans (429) included.
func TestUserLockAnswersCarryRateLimitHeaders(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Locks["login"] = abuse.Policy{MaxAttempts: 3, BanAfterFlags: 1, BanFor: 90 * time.Second, Factor: 1}
	b := redistest.OnMini(t)
	env := apptest.NewApp(t, b, apptest.Options{UserLocks: true, Policies: pol, HeaderAuth: true})

	want := func(t *testing.T, a *apptest.Answer, policy, limit string) {
		t.Helper()
		a.HeaderIs(t, "RateLimit-Policy", policy)
		a.HeaderIs(t, "RateLimit", limit)
	}

	t.Run("the first attempts count down the attempts left and the seconds to reset", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 60}`).Want(t, 200)
		want(t, a, `"login";q=3;w=60`, `"login";r=2;t=60`)
		b.Advance(t, 10*time.Second)
		a = env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 60}`).Want(t, 200)
		want(t, a, `"login";q=3;w=60`, `"login";r=1;t=50`)
	})

	t.Run("the attempt at the threshold has none left and is flagged", func(t *testing.T) {
		b.Advance(t, 500*time.Millisecond)
		a := env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 60}`).Want(t, 200)
		if a.Object["flagged"] != true {
			t.Errorf("got flagged %v, want true", a.Object["flagged"])
		}
		// 49.5 s left: rounded up, so a client that waits t finds it over.
		want(t, a, `"login";q=3;w=60`, `"login";r=0;t=50`)
	})

	t.Run("a banned user's 429 has the headers, reset at the ban's end", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 60}`).Want(t, 429)
		a.Slug(t, "abnormal-usage-detected")
		want(t, a, `"login";q=3;w=60`, `"login";r=0;t=90`)
		a.HeaderIs(t, "Retry-After", "90")
	})

	t.Run("the default policy of other lock names is shown", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/other/bob", "").Want(t, 200)
		want(t, a, `"other";q=`+strconv.Itoa(abuse.DefaultMaxAttempts)+`;w=10`, `"other";r=4;t=10`)
	})

	t.Run("a refused request (422) carries none", func(t *testing.T) {
		a := env.Do(t, "POST", "/user-locks/login/alice", `{"ttl_seconds": 0}`).Want(t, 422)
		a.HeaderIs(t, "RateLimit", "")
	})
}

// With rolling_window_seconds the fields describe the span: w the span,
// r the attempts left in it before the flag, t until its oldest counted
// attempt leaves it (contract v1.4, "Rolling windows").
func TestRollingSpanRateLimitHeaders(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Locks["checkin"] = abuse.Policy{MaxAttempts: 3, Rolling: 120 * time.Second}
	b := redistest.OnMini(t)
	env := apptest.NewApp(t, b, apptest.Options{UserLocks: true, Policies: pol, HeaderAuth: true})
	a := env.Do(t, "POST", "/user-locks/checkin/alice", `{"ttl_seconds": 10}`).Want(t, 200)
	a.HeaderIs(t, "RateLimit-Policy", `"checkin";q=3;w=120`)
	a.HeaderIs(t, "RateLimit", `"checkin";r=2;t=120`)
	b.Advance(t, 30*time.Second) // a new fixed window; the span still holds the first attempt
	a = env.Do(t, "POST", "/user-locks/checkin/alice", `{"ttl_seconds": 10}`).Want(t, 200)
	a.HeaderIs(t, "RateLimit", `"checkin";r=1;t=90`)
	a = env.Do(t, "POST", "/user-locks/checkin/alice", `{"ttl_seconds": 10}`).Want(t, 200)
	a.HeaderIs(t, "RateLimit", `"checkin";r=0;t=90`)
	if a.Object["flagged"] != true {
		t.Errorf("got flagged %v at the third attempt within the span, want true", a.Object["flagged"])
	}
}
