package opsui_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/opsui"
	"github.com/leasegate/leasegate/redislock"
)

// The ops page's login limit, server-side logout and the escaping of
// invisible characters on the page (docs/abuse.md#logging-in-to-the-page).

// secGateway is a gateway of env whose page logins keep their state (login
// failures, ended sessions) in env's Redis, as server.New wires it.
// The client address is the X-Test-Remote header, when set, as if a
// trusted proxy had said so.
func secGateway(t *testing.T, env *apptest.App) *echo.Echo {
	t.Helper()
	svc := abuse.New(env.Backend.RDB, abuse.Options{})
	deps := handlers.Deps{
		Locks:     redislock.NewService(redislock.New(env.Backend.RDB, redislock.Config{}), nil),
		UserLocks: svc,
		Flags:     svc,
		Auth:      env.Ring,
		IPExtractor: func(r *http.Request) string {
			if v := r.Header.Get("X-Test-Remote"); v != "" {
				return v
			}
			return echo.ExtractIPDirect()(r)
		},
	}
	e := handlers.New(handlers.DefaultConfig(), deps)
	opsui.Register(e, handlers.DefaultConfig(), deps, auth.NewSessionsWith(env.Ring, auth.SessionOptions{Redis: env.Backend.RDB, Prefix: "opssec:"}))
	return e
}

// loginFrom posts key to the login form of b's gateway from the client
// address addr.
func loginFrom(b *browser, addr, key string) (*http.Response, string) {
	b.t.Helper()
	b.do("GET", "/ops/login", nil)
	return b.do("POST", "/ops/login", url.Values{"csrf": {b.csrf()}, "key": {key}}, "X-Test-Remote", addr)
}

const wrongKey = "lg_this-key-is-not-configured-at-all"

func TestOpsLoginRateLimit(t *testing.T) {
	t.Parallel()
	t.Run("the sixth failed login from one address gets 429 with Retry-After, even with the right key", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		for i := 1; i <= 5; i++ {
			if res, _ := loginFrom(b, "198.51.100.7", wrongKey); res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("failed login %d: got %d, want 401", i, res.StatusCode)
			}
		}
		res, body := loginFrom(b, "198.51.100.7", loginOpsKey)
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("got %d, want 429", res.StatusCode)
		}
		if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Errorf("got Retry-After %q, want the seconds left in the window", ra)
		}
		if !strings.Contains(body, `action="/ops/login"`) || !strings.Contains(body, "Too many failed logins") {
			t.Errorf("got no login form with the rate-limit message: %s", body)
		}
		if ck := setCookie(res, sessionName); ck != nil {
			t.Error("got a session cookie from a rate-limited login")
		}
	})

	t.Run("the limit is per address and shared by every gateway on the same Redis", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		one, two := newBrowser(t, secGateway(t, env)), newBrowser(t, secGateway(t, env))
		for i := 1; i <= 5; i++ {
			b := one
			if i%2 == 0 {
				b = two
			}
			loginFrom(b, "198.51.100.8", wrongKey)
		}
		if res, _ := loginFrom(two, "198.51.100.8", wrongKey); res.StatusCode != http.StatusTooManyRequests {
			t.Errorf("the other gateway: got %d, want 429", res.StatusCode)
		}
		if res, _ := loginFrom(one, "203.0.113.9", loginOpsKey); res.StatusCode != http.StatusSeeOther {
			t.Errorf("another address: got %d, want 303", res.StatusCode)
		}
	})

	t.Run("the window ends and logins work again", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		for i := 1; i <= 6; i++ {
			loginFrom(b, "198.51.100.10", wrongKey)
		}
		env.Backend.Mini.FastForward(15*60*1e9 + 1e9)
		if res, _ := loginFrom(b, "198.51.100.10", loginOpsKey); res.StatusCode != http.StatusSeeOther {
			t.Errorf("after the window: got %d, want 303", res.StatusCode)
		}
	})

	t.Run("successful logins do not count against the address", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		for i := 1; i <= 8; i++ {
			b := newBrowser(t, secGateway(t, env))
			if res, _ := loginFrom(b, "198.51.100.11", loginOpsKey); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("login %d: got %d, want 303", i, res.StatusCode)
			}
		}
	})

	t.Run("a client key refused for its role is limited by its name from any address", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		for i := 1; i <= 5; i++ {
			addr := "198.51.100." + strconv.Itoa(100+i)
			if res, _ := loginFrom(b, addr, loginClientKey); res.StatusCode != http.StatusForbidden {
				t.Fatalf("role refusal %d: got %d, want 403", i, res.StatusCode)
			}
		}
		res, _ := loginFrom(b, "198.51.100.200", loginClientKey)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Errorf("got %d (Retry-After %q), want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if res, _ := loginFrom(b, "198.51.100.200", loginOpsKey); res.StatusCode != http.StatusSeeOther {
			t.Errorf("the ops key from that address: got %d, want 303", res.StatusCode)
		}
	})

	t.Run("with Redis down a login is refused with 503, never checked unlimited", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		b.do("GET", "/ops/login", nil)
		env.Backend.Mini.SetError("LOADING Redis is loading the dataset in memory")
		t.Cleanup(func() { env.Backend.Mini.SetError("") })
		res, body := b.do("POST", "/ops/login", url.Values{"csrf": {b.csrf()}, "key": {loginOpsKey}})
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("got %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if setCookie(res, sessionName) != nil || !strings.Contains(body, `action="/ops/login"`) {
			t.Errorf("got a session or no form: %s", body)
		}
	})
}

func TestOpsLogoutEndsTheSession(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	b := newBrowser(t, secGateway(t, env))
	ck := b.mustLogin()
	copied := *ck

	res, _ := b.do("POST", "/ops/logout", url.Values{"csrf": {b.csrf()}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: got %d, want 303", res.StatusCode)
	}

	for name, e := range map[string]*echo.Echo{"the same gateway": b.e, "another gateway": secGateway(t, env)} {
		t.Run("the logged-out cookie replayed to "+name+" is sent to the login form", func(t *testing.T) {
			thief := newBrowser(t, e)
			thief.cookies[sessionName] = &copied
			res, _ := thief.do("GET", "/ops/", nil)
			wantLoginRedirect(t, res)
			if c := setCookie(res, sessionName); c == nil || c.MaxAge >= 0 {
				t.Error("got the replayed cookie kept, want it deleted")
			}
			res, _ = thief.do("POST", "/ops/clear", url.Values{"csrf": {thief.csrf()}, "user_id": {"u"}})
			if res.StatusCode == http.StatusSeeOther && res.Header.Get("Location") != "/ops/login" {
				t.Errorf("a form post with the replayed cookie went through to %q", res.Header.Get("Location"))
			}
		})
	}

	t.Run("another session of the same key is not ended", func(t *testing.T) {
		other := newBrowser(t, b.e)
		other.mustLogin()
		if res, _ := other.do("GET", "/ops/", nil); res.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})
}

func TestOpsSessionsWhileRedisIsDown(t *testing.T) {
	t.Parallel()
	t.Run("the page answers 503 and keeps the cookie: the session may be valid", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		b.mustLogin()
		env.Backend.Mini.SetError("LOADING Redis is loading the dataset in memory")
		res, _ := b.do("GET", "/ops/", nil)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Errorf("got %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
		}
		if setCookie(res, sessionName) != nil || b.cookies[sessionName] == nil {
			t.Error("got the session cookie changed, want it kept")
		}
		env.Backend.Mini.SetError("")
		if res, _ := b.do("GET", "/ops/", nil); res.StatusCode != http.StatusOK {
			t.Errorf("after the outage: got %d, want 200", res.StatusCode)
		}
	})

	t.Run("a logout drops the cookie and says, with 503, that a copy stays valid", func(t *testing.T) {
		env := newLoginEnv(t, handlers.DefaultConfig())
		b := newBrowser(t, secGateway(t, env))
		copied := *b.mustLogin()
		env.Backend.Mini.SetError("LOADING Redis is loading the dataset in memory")
		res, body := b.do("POST", "/ops/logout", url.Values{"csrf": {b.csrf()}})
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "could not record the logout") {
			t.Errorf("got %d, want 503 and the form saying the logout was not recorded: %s", res.StatusCode, body)
		}
		if b.cookies[sessionName] != nil {
			t.Error("got the session cookie kept, want it dropped")
		}
		env.Backend.Mini.SetError("")
		thief := newBrowser(t, b.e)
		thief.cookies[sessionName] = &copied
		if res, _ := thief.do("GET", "/ops/", nil); res.StatusCode != http.StatusOK {
			t.Errorf("the copy after an unrecorded logout: got %d, want 200 (as the form said)", res.StatusCode)
		}
	})
}
