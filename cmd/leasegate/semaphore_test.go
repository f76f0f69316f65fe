package main

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
)

func TestSemaphoreRunsTheCommandHoldingAPermit(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	c := client.New(g.url)
	ctx := context.Background()

	t.Run("passes the permit in the environment and gives it back at exit", func(t *testing.T) {
		other, err := c.AcquirePermit(ctx, "provider", 2, 30*time.Second, client.WithOwner("other"))
		if err != nil {
			t.Fatal(err)
		}
		r := runCommandNow(t, env, "semaphore", "provider", "--limit", "2", "--owner", "cron-1", "--",
			"sh", "-c", `echo "$LEASEGATE_TOKEN|$LEASEGATE_RESOURCE|$LEASEGATE_OWNER"`)
		if r.code != 0 {
			t.Fatalf("got exit %d (stderr %q), want 0", r.code, r.stderr.String())
		}
		parts := strings.Split(strings.TrimSpace(r.stdout.String()), "|")
		if len(parts) != 3 || parts[1] != "provider" || parts[2] != "cron-1" {
			t.Fatalf("got %q, want token|provider|cron-1", r.stdout.String())
		}
		if tok, err := strconv.ParseInt(parts[0], 10, 64); err != nil || tok <= other.Token {
			t.Errorf("got token %q, want above the other holder's %d", parts[0], other.Token)
		}
		st, err := c.SemaphoreStatus(ctx, "provider")
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Owner != "other" {
			t.Errorf("after exit: got %+v, %v; want only the other holder", st, err)
		}
	})

	t.Run("a full semaphore exits 75 without running the command", func(t *testing.T) {
		if _, err := c.AcquirePermit(ctx, "full", 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		r := runCommandNow(t, env, "semaphore", "--limit", "1", "full", "--", "sh", "-c", "echo ran")
		if r.code != exitNotAcquired || strings.Contains(r.stdout.String(), "ran") {
			t.Errorf("got exit %d, stdout %q; want 75 and nothing run", r.code, r.stdout.String())
		}
	})

	t.Run("a limit that differs from the one in force is a usage error", func(t *testing.T) {
		if _, err := c.AcquirePermit(ctx, "lim", 3, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		r := runCommandNow(t, env, "semaphore", "lim", "--limit", "4", "--", "true")
		if r.code != 2 || !strings.Contains(r.stderr.String(), "3") {
			t.Errorf("got exit %d, stderr %q; want 2 naming the limit in force, 3", r.code, r.stderr.String())
		}
	})

	t.Run("the exit status is the command's", func(t *testing.T) {
		r := runCommandNow(t, env, "semaphore", "exit", "--limit", "1", "--", "sh", "-c", "exit 7")
		if r.code != 7 {
			t.Fatalf("got exit %d, want 7", r.code)
		}
		if _, err := c.SemaphoreStatus(ctx, "exit"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("status got %v, want ErrNotFound (given back)", err)
		}
	})
}

func TestSemaphoreUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"name", "--", "true"},                 // no --limit
		{"name", "--limit", "0", "--", "true"}, // limit out of range
		{"name", "--limit", "10001", "--", "true"}, // limit out of range
		{"name", "--limit", "2"},                   // no CMD
		{"name", "--limit", "2", "--ttl", "1500ms", "--", "true"},
	} {
		r := runCommandNow(t, map[string]string{"LEASEGATE_URL": "http://127.0.0.1:1"}, "semaphore", args...)
		if r.code != 2 {
			t.Errorf("%q: got exit %d, want 2 (usage)", args, r.code)
		}
	}
}
