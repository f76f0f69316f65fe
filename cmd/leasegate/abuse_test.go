package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/webhook"
)

// startGateway runs a real gateway (embedded Redis) on a free loopback
// port with max_attempts 2, and returns its URL.
func startGateway(t *testing.T) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.AbusePolicies.Default.MaxAttempts = 2
	cfg.AbusePolicies.AttemptLogMaxEntries = 1000
	cfg.AbuseLog = io.Discard
	return gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, env map[string]string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb,
		func(k string) string { return env[k] })
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestAbuseCommands(t *testing.T) {
	t.Parallel()
	url := startGateway(t)
	ctx := context.Background()
	c := client.New(url)
	flag := func(lock, user string) {
		t.Helper()
		for i := 0; i < 2; i++ {
			if _, err := c.UserLock(ctx, lock, user, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	}
	flag("login", "alice")
	time.Sleep(2 * time.Millisecond) // distinct last_flagged_at, so the order is known
	flag("export", "bob")
	env := map[string]string{"LEASEGATE_URL": url}

	t.Run("list prints a table, newest first", func(t *testing.T) {
		r := runCLI(t, env, "abuse", "list")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "USER") ||
			!strings.HasPrefix(lines[1], "bob ") || !strings.HasPrefix(lines[2], "alice ") {
			t.Errorf("got\n%s\nwant a header, bob, then alice", r.stdout)
		}
	})

	t.Run("list --json filters by lock and pages with --all", func(t *testing.T) {
		r := runCLI(t, env, "abuse", "list", "--json", "--lock", "login")
		var page client.FlagPage
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatalf("got %q: %v", r.stdout, err)
		}
		if len(page.Items) != 1 || page.Items[0].UserID != "alice" || page.Items[0].PeakAttempts != 2 {
			t.Errorf("got %+v, want alice on login", page.Items)
		}
		r = runCLI(t, env, "abuse", "list", "--json", "--limit", "1", "--all")
		page = client.FlagPage{}
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 2 || page.NextCursor != nil {
			t.Errorf("got %d items, next %v, want both users and no cursor", len(page.Items), page.NextCursor)
		}
		r = runCLI(t, env, "abuse", "list", "--limit", "1")
		if !strings.Contains(r.stdout, "more: leasegate abuse list --cursor ") {
			t.Errorf("got %q, want a hint for the next page", r.stdout)
		}
	})

	t.Run("ban, show and unban a user, flags after the user id", func(t *testing.T) {
		r := runCLI(t, nil, "abuse", "ban", "bob", "--url", url, "--for", "90s", "--reason", "scraping")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "banned bob until ") {
			t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
		}
		_, err := c.UserLock(ctx, "export", "bob", 0)
		var ce *client.Error
		if !errors.Is(err, leasegate.ErrBanned) || !errors.As(err, &ce) || ce.RetryAfter != 90*time.Second {
			t.Errorf("got %v, want abnormal usage with Retry-After 90s", err)
		}
		r = runCLI(t, env, "abuse", "show", "bob")
		if !strings.Contains(r.stdout, "banned: until") || !strings.Contains(r.stdout, "scraping") || !strings.Contains(r.stdout, "export") {
			t.Errorf("got %q, want the ban and the export flag", r.stdout)
		}
		for _, want := range []string{" at 20", "export: automatic bans 0, ", " attempts of the flagged window from ", " +0.000s"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("got %q, want the ban's time and the flag's evidence (%q)", r.stdout, want)
			}
		}
		r = runCLI(t, env, "abuse", "unban", "bob")
		if r.code != 0 || r.stdout != "lifted the ban of bob\n" {
			t.Errorf("unban: exit %d %q %q", r.code, r.stdout, r.stderr)
		}
		r = runCLI(t, env, "abuse", "unban", "bob")
		if r.code != 1 || !strings.Contains(r.stderr, "not-found") {
			t.Errorf("second unban: got exit %d %q, want 1 and not-found", r.code, r.stderr)
		}
	})

	t.Run("clear removes the user from the list", func(t *testing.T) {
		r := runCLI(t, env, "abuse", "clear", "alice", "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"cleared": true`) {
			t.Fatalf("exit %d: %q %q", r.code, r.stdout, r.stderr)
		}
		r = runCLI(t, env, "abuse", "show", "alice")
		if r.code != 1 {
			t.Errorf("show after clear: got exit %d, want 1", r.code)
		}
		r = runCLI(t, env, "abuse", "list")
		if strings.Contains(r.stdout, "alice") {
			t.Errorf("got %q, want alice gone", r.stdout)
		}
	})

	usage := [][]string{
		{"abuse"},
		{"abuse", "frobnicate"},
		{"abuse", "show"},
		{"abuse", "ban", "a", "b"},
		{"abuse", "list", "extra"},
		{"abuse", "ban", "bob", "--for", "1.5s"},
		{"abuse", "list", "--limit", "x"},
	}
	for _, args := range usage {
		t.Run("usage error for "+strings.Join(args, " "), func(t *testing.T) {
			if r := runCLI(t, env, args...); r.code != 2 {
				t.Errorf("got exit %d (%q), want 2", r.code, r.stderr)
			}
		})
	}

	t.Run("a gateway that is not there is exit 1", func(t *testing.T) {
		r := runCLI(t, map[string]string{"LEASEGATE_URL": "http://127.0.0.1:1"}, "abuse", "list")
		if r.code != 1 {
			t.Errorf("got exit %d, want 1", r.code)
		}
	})
}

func TestPrintableQuotesTerminalTricks(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"alice":         "alice",
		"a b":           "a b",
		"x\x1b[31m":     `"x\x1b[31m"`,
		" padded":       `" padded"`,
		"tab\tinside":   `"tab\tinside"`,
		"c1\u009bstuff": `"c1\u009bstuff"`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q): got %s, want %s", in, got, want)
		}
	}
}

func TestServeRejectsBadAbuseSettings(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"a missing policy file":  {"serve", "--abuse-policy-file", "/nonexistent/policy.json"},
		"max attempts of zero":   {"serve", "--abuse-max-attempts", "0"},
		"a retention under 1s":   {"serve", "--abuse-flag-retention", "10ms"},
		"an abuse log in no dir": {"serve", "--abuse-log", "/nonexistent/dir/abuse.log"},
	}
	for name, args := range cases {
		t.Run("refuses "+name, func(t *testing.T) {
			if r := runCLI(t, nil, args...); r.code != 2 {
				t.Errorf("got exit %d (%q), want 2", r.code, r.stderr)
			}
		})
	}
}

func TestAbuseLogFlagOpensAFile(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/abuse.log"
	af := abuseFlags{maxAttempts: 3, flagRetention: time.Hour, log: path}
	cfg := server.DefaultConfig()
	closeLog, err := af.apply(&cfg, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.AbuseLog.Write([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if err := closeLog(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("got mode %v, want 0600", st.Mode().Perm())
	}
	if cfg.AbusePolicies.Default.MaxAttempts != 3 || cfg.AbusePolicies.FlagRetention != time.Hour {
		t.Errorf("got policies %+v, want max 3 and 1h retention", cfg.AbusePolicies)
	}
}

func TestPolicyFileOverridesTheFlags(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/policy.json"
	if err := os.WriteFile(path, []byte(`{"default": {"max_attempts": 9}, "locks": {"login": {"ban_after_flags": 2, "ban_seconds": 60}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	af := abuseFlags{policyFile: path, maxAttempts: 3, flagRetention: time.Hour, log: "stderr"}
	cfg := server.DefaultConfig()
	if _, err := af.apply(&cfg, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := cfg.AbusePolicies.For("login"); got.MaxAttempts != 9 || got.BanAfterFlags != 2 || got.BanFor != time.Minute {
		t.Errorf("got login policy %+v, want max 9 (file default), ban after 2 for 1m", got)
	}
}

// leasegate abuse webhooks shows the outbox and the dead letters: events
// the gateway gave up on after --webhook-max-attempts tries.
func TestAbuseWebhooksListsDeadLetters(t *testing.T) {
	t.Parallel()
	tries := make(chan struct{}, 100)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tries <- struct{}{}
		http.Error(w, "nope", http.StatusBadGateway)
	}))
	t.Cleanup(rcv.Close)
	cfg := server.DefaultConfig()
	cfg.AbuseLog = io.Discard
	cfg.Webhooks = webhook.Config{URLs: []string{rcv.URL}, Secret: "0123456789abcdef-cli", MaxAttempts: 2,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Timeout: time.Second, Poll: 10 * time.Millisecond}
	url := gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
	c := client.New(url)
	ctx := context.Background()

	r := runCLI(t, nil, "abuse", "webhooks", "--url", url)
	if r.code != 0 || !strings.Contains(r.stdout, "outbox: 0 entries, 0 pending delivery, 0 dead letters shown") {
		t.Fatalf("before: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := c.BanUser(ctx, "mallory", time.Hour, "card testing"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-tries:
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery try within 20s")
		}
	}
	redistest.Eventually(t, 20*time.Second, "one dead letter", func() bool {
		st, err := c.WebhookStatus(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.DeadLetters) == 1
	})
	r = runCLI(t, nil, "abuse", "webhooks", "--url", url)
	for _, want := range []string{"1 dead letters shown", "ban", rcv.URL, "answered 502"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("got %q, want %q in it", r.stdout, want)
		}
	}
	r = runCLI(t, nil, "abuse", "webhooks", "--url", url, "--json")
	var st client.WebhookStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Enabled || len(st.DeadLetters) != 1 {
		t.Fatalf("--json: %v %q", err, r.stdout)
	}
	var ev webhook.Event
	if err := json.Unmarshal(st.DeadLetters[0].Event, &ev); err != nil || ev.Type != "ban" || ev.UserID != "mallory" || ev.Reason != "card testing" || ev.ID != st.DeadLetters[0].ID {
		t.Errorf("got dead event %+v (%v)", ev, err)
	}
	if r := runCLI(t, nil, "abuse", "webhooks", "extra", "--url", url); r.code != 2 {
		t.Errorf("with an argument: got exit %d, want 2", r.code)
	}
}

// A gateway started with the default flags records attempts, so a
// backtest works at once.
func TestAbuseBacktestWorksOnAFreshGatewayWithDefaultFlags(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	var level string
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	a := serveFlags(fs, &cfg, &level)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.apply(&cfg, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	url := gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
	c := client.New(url)
	for range 6 {
		if _, err := c.UserLock(context.Background(), "checkin", "eve", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, map[string]string{"LEASEGATE_URL": url}, "abuse", "backtest", "--lock", "checkin", "--max-attempts", "7")
	if r.code != 0 || !strings.Contains(r.stdout, "no longer flagged: 1") {
		t.Errorf("got exit %d, stdout\n%s\nstderr %s; want eve no longer flagged", r.code, r.stdout, r.stderr)
	}
}

func TestAbuseBacktestPrintsTheSummaryAndTheUsersThatDiffer(t *testing.T) {
	t.Parallel()
	url := startGateway(t)
	c := client.New(url)
	for _, user := range []string{"alice", "alice", "alice", "bob"} {
		if _, err := c.UserLock(context.Background(), "login", user, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"LEASEGATE_URL": url}
	r := runCLI(t, env, "abuse", "backtest", "--lock", "login", "--max-attempts", "4", "--since", "1h")
	if r.code != 0 {
		t.Fatalf("got exit %d, stderr %s", r.code, r.stderr)
	}
	for _, want := range []string{"flagged users", "max 2", "max 4", "no longer flagged: 1", "newly flagged: 0", "alice  3 "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("got\n%s\nwant %q in it", r.stdout, want)
		}
	}
	r = runCLI(t, env, "abuse", "backtest", "--lock", "login", "--max-attempts", "0")
	if r.code == 0 || !strings.Contains(r.stderr, "policy.max_attempts") {
		t.Errorf("max-attempts 0: got exit %d, stderr %s; want a failure naming policy.max_attempts", r.code, r.stderr)
	}
}
