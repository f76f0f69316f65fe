package opsui_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The page finds a user by exact id: the user's flags, ban and actions;
// a prefix or an unknown id finds nothing.
func TestOpsPageFindsAUser(t *testing.T) {
	t.Parallel()
	env := newLoginEnv(t, handlers.DefaultConfig())
	flagInTenant(t, env.E, "alice")
	flagInTenant(t, env.E, "alice-2")
	flagInTenant(t, env.E, `<b>bob</b>`)
	// A ban with no flags: found all the same.
	apptest.Do(t, env.E, "POST", "/abuse/bans/carol", `{"seconds": 600, "reason": "chargebacks"}`,
		"Authorization", "Bearer "+loginOpsKey).Want(t, 201)

	find := func(t *testing.T, id string) string {
		t.Helper()
		return opsPageAs(t, env, "/ops/?user_id="+url.QueryEscape(id))
	}
	t.Run("an exact id shows that user's flags only, with the actions", func(t *testing.T) {
		body := find(t, "alice")
		if !strings.Contains(body, `<h2>User <code>alice</code></h2>`) {
			t.Errorf("got page %s, want the record of alice", body)
		}
		if got := strings.Count(body, `<tr data-user="alice">`); got != 1 {
			t.Errorf("got %d rows of alice, want 1", got)
		}
		if strings.Contains(body, `data-user="alice-2"`) {
			t.Error("got alice-2 on the page of alice, want an exact match")
		}
		if !strings.Contains(body, `name="user_id" value="alice"`) || !strings.Contains(body, `action="/ops/ban"`) {
			t.Error("got no ban form for alice")
		}
		if !strings.Contains(body, `id="user_id" name="user_id" value="alice"`) {
			t.Error("got a search box without the id searched")
		}
	})
	t.Run("a prefix finds nothing", func(t *testing.T) {
		body := find(t, "ali")
		if !strings.Contains(body, "Nothing for this user") || strings.Contains(body, `<tr data-user=`) {
			t.Errorf("got page %s, want nothing found", body)
		}
	})
	t.Run("a banned user without flags shows the ban and an Unban button", func(t *testing.T) {
		body := find(t, "carol")
		for _, want := range []string{"chargebacks", "by <code>oncall</code>", `class="banned"`, `action="/ops/unban"`} {
			if !strings.Contains(body, want) {
				t.Errorf("got page %s, want %q in it", body, want)
			}
		}
	})
	t.Run("a hostile id is shown escaped", func(t *testing.T) {
		body := find(t, `<b>bob</b>`)
		if strings.Contains(body, "<b>bob") || !strings.Contains(body, "&lt;b&gt;bob&lt;/b&gt;") {
			t.Errorf("got page %s, want the id escaped", body)
		}
		if !strings.Contains(body, `<tr data-user="&lt;b&gt;bob&lt;/b&gt;">`) {
			t.Error("got no row for the hostile id")
		}
	})
	t.Run("an id that cannot be one is sent back to the list", func(t *testing.T) {
		b := newBrowser(t, env.E)
		res, _ := b.do("GET", "/ops/?user_id="+strings.Repeat("x", 129), nil, "Authorization", "Bearer "+loginOpsKey)
		if loc := res.Header.Get("Location"); res.StatusCode != 303 || loc != "/ops/?msg=invalid" {
			t.Errorf("got %d to %q, want 303 to /ops/?msg=invalid", res.StatusCode, loc)
		}
	})
	t.Run("an empty search box shows the list", func(t *testing.T) {
		body := opsPageAs(t, env, "/ops/?user_id=")
		if !strings.Contains(body, `data-user="alice-2"`) || strings.Contains(body, `class="record"`) {
			t.Errorf("got page %s, want the list", body)
		}
	})
}

// An active ban is shown with its reason, who placed it and when: an
// operator's key name, or the policy of a lock.
func TestOpsPageShowsBanReasonAndAuthor(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 2
	pol.Default.BanAfterFlags = 1
	pol.Default.BanFor = time.Hour
	b := redistest.OnMini(t)
	env := apptest.NewApp(t, b, apptest.Options{UserLocks: true, Policies: pol, Keys: loginEntries(), Sessions: true})

	flagInTenant(t, env.E, "policy-banned") // the first flagged window bans
	flagInTenant(t, env.E, "op-banned")
	// An operator's ban replaces the policy's.
	b.SetTime(epoch.Add(time.Minute))
	apptest.Do(t, env.E, "POST", "/abuse/bans/op-banned", `{"seconds": 600, "reason": "<i>resold</i> \u202egpj.exe"}`,
		"Authorization", "Bearer "+loginOpsKey).Want(t, 201)

	body := opsPageAs(t, env, "/ops/")
	row := func(user string) string {
		i := strings.Index(body, `<tr data-user="`+user+`">`)
		if i < 0 {
			t.Fatalf("got page %s, want a row of %s", body, user)
		}
		j := strings.Index(body[i:], "</tr>")
		return body[i : i+j]
	}
	t.Run("an operator's ban shows the key name, the time and the reason escaped", func(t *testing.T) {
		r := row("op-banned")
		for _, want := range []string{
			"by <code>oncall</code>",
			`on <time datetime="2026-11-30T09:31:00.000Z">`,
			`&lt;i&gt;resold&lt;/i&gt; <span class="esc" title="U+202E">\u{202E}</span>gpj.exe`,
			`Banned until <time class="banned" datetime="2026-11-30T09:41:00.000Z">`,
		} {
			if !strings.Contains(r, want) {
				t.Errorf("got row %s, want %q in it", r, want)
			}
		}
		if strings.Contains(r, "<i>") || strings.Contains(r, "\u202e") {
			t.Error("got the reason unescaped")
		}
	})
	t.Run("a policy ban names the policy and its lock", func(t *testing.T) {
		r := row("policy-banned")
		if want := "by the policy of lock <code>login</code>"; !strings.Contains(r, want) {
			t.Errorf("got row %s, want %q in it", r, want)
		}
		if !strings.Contains(r, `class="banned"`) {
			t.Errorf("got row %s, want the ban's end", r)
		}
	})
}
