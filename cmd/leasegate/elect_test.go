package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/keyspace"
)

func TestElectRunsTheCommandOnlyWhileLeading(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	c := client.New(g.url)
	ctx := context.Background()

	t.Run("passes the term in the environment, proclaims the value and resigns at exit", func(t *testing.T) {
		r := runCommandNow(t, env, "elect", "nightly", "--candidate", "node-a", "--value", "10.0.0.1", "--",
			"sh", "-c", `echo "$LEASEGATE_TERM|$LEASEGATE_ELECTION|$LEASEGATE_OWNER"`)
		if r.code != 0 {
			t.Fatalf("got exit %d (stderr %q), want 0", r.code, r.stderr.String())
		}
		parts := strings.Split(strings.TrimSpace(r.stdout.String()), "|")
		if len(parts) != 3 || parts[1] != "nightly" || parts[2] != "node-a" {
			t.Fatalf("got %q, want term|nightly|node-a", r.stdout.String())
		}
		if term, err := strconv.ParseInt(parts[0], 10, 64); err != nil || term <= 0 {
			t.Errorf("got term %q, want a positive integer", parts[0])
		}
		if _, err := c.Leader(ctx, "nightly"); !errors.Is(err, leasegate.ErrNoLeader) {
			t.Errorf("after exit: got %v, want ErrNoLeader (resigned)", err)
		}
	})

	t.Run("propagates the exit status", func(t *testing.T) {
		if r := runCommandNow(t, env, "elect", "exits", "--", "sh", "-c", "exit 7"); r.code != 7 {
			t.Fatalf("got exit %d, want 7", r.code)
		}
	})

	t.Run("a standby candidate waits in line and runs once the leader resigns", func(t *testing.T) {
		gate := filepath.Join(t.TempDir(), "go")
		first, firstDone := runCommand(ctx, env, "elect", "standby", "--candidate", "node-a", "--",
			"sh", "-c", `echo started; while [ ! -e "$0" ]; do sleep 0.02; done`, gate)
		first.waitStarted(t)
		ld, err := c.Leader(ctx, "standby")
		if err != nil || ld.Candidate != "node-a" {
			t.Fatalf("got %+v, %v; want node-a leading", ld, err)
		}
		second, secondDone := runCommand(ctx, env, "elect", "standby", "--candidate", "node-b", "--",
			"sh", "-c", `echo "b $LEASEGATE_TERM"`)
		// node-b must not run while node-a leads.
		select {
		case <-secondDone:
			t.Fatalf("the standby finished while the leader ran: exit %d, stdout %q", second.code, second.stdout.String())
		case <-time.After(300 * time.Millisecond):
		}
		if strings.Contains(second.stdout.String(), "b ") {
			t.Fatalf("the standby ran while node-a led: %q", second.stdout.String())
		}
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		<-firstDone
		if first.code != 0 {
			t.Fatalf("leader: got exit %d (stderr %q), want 0", first.code, first.stderr.String())
		}
		select {
		case <-secondDone:
		case <-time.After(10 * time.Second):
			t.Fatal("the standby did not run within 10s of the resignation")
		}
		var term int64
		if _, err := fmtSscan(second.stdout.String(), "b", &term); err != nil || term <= ld.Term {
			t.Errorf("standby: got %q, want a term above %d", second.stdout.String(), ld.Term)
		}
	})

	t.Run("stops the command when another candidate takes the leadership", func(t *testing.T) {
		r, done := runCommand(ctx, env, "elect", "fragile", "--candidate", "node-a", "--ttl", "3s", "--kill-after", "5s", "--",
			"sh", "-c", `trap 'echo got-term; exit 0' TERM; echo started; while :; do sleep 0.05; done`)
		r.waitStarted(t)
		// The leadership ends behind node-a's back (as a paused node's
		// lease would expire) and node-b is elected.
		key := keyspace.Space{Prefix: "lg:"}.Elections().Resource("", "fragile").Lock()
		if err := g.s.Redis().HDel(ctx, key, "owner", "expires_at").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: "fragile", Candidate: "node-b", TTL: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("leasegate elect did not stop the command within 10s")
		}
		if r.code != exitLeaseLost {
			t.Errorf("got exit %d, want %d", r.code, exitLeaseLost)
		}
		if !strings.Contains(r.stdout.String(), "got-term") || !strings.Contains(r.stderr.String(), "lost") {
			t.Errorf("got stdout %q stderr %q, want SIGTERM and a loss message", r.stdout.String(), r.stderr.String())
		}
		if ld, err := c.Leader(ctx, "fragile"); err != nil || ld.Candidate != "node-b" {
			t.Errorf("got %+v, %v; want node-b still leading (node-a's resign is term-checked)", ld, err)
		}
	})

	t.Run("a leader elsewhere with no wait exits 75 without running", func(t *testing.T) {
		if _, err := c.Campaign(ctx, leasegate.CampaignRequest{Name: "taken", Candidate: "other", TTL: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		r := runCommandNow(t, env, "elect", "taken", "--candidate", "me", "--wait", "0s", "--", "sh", "-c", "echo ran")
		if r.code != exitNotAcquired || strings.Contains(r.stdout.String(), "ran") {
			t.Errorf("got exit %d stdout %q, want %d and no run", r.code, r.stdout.String(), exitNotAcquired)
		}
	})

	t.Run("usage errors exit 2", func(t *testing.T) {
		for _, args := range [][]string{
			{},
			{"name"},
			{"name", "--value", strings.Repeat("v", 4097), "--", "true"},
			{"name", "--lock-delay", "2m", "--", "true"},
		} {
			if r := runCommandNow(t, env, "elect", args...); r.code != 2 {
				t.Errorf("elect %q: got exit %d, want 2", args, r.code)
			}
		}
	})
}

// fmtSscan reads "<word> <n>" from s.
func fmtSscan(s, word string, n *int64) (int, error) {
	f := strings.Fields(strings.TrimSpace(s))
	if len(f) != 2 || f[0] != word {
		return 0, errors.New("unexpected output")
	}
	v, err := strconv.ParseInt(f[1], 10, 64)
	*n = v
	return 1, err
}

// When the leadership cannot be confirmed (the gateway is gone), CMD is
// stopped before the leadership would end by the local clock: --ttl/10
// before it, then killed if it ignores SIGTERM.
func TestElectStopsTheCommandWhenLeadershipCannotBeConfirmed(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	r, done := runCommand(context.Background(), env, "elect", "unconfirmed", "--candidate", "node-a", "--ttl", "2s", "--kill-after", "300ms", "--",
		"sh", "-c", `trap '' TERM; echo started; while :; do sleep 0.05; done`)
	r.waitStarted(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("leasegate elect did not stop the command within 10s of the gateway's end")
	}
	if r.code != exitLeaseLost {
		t.Errorf("got exit %d (stderr %q), want %d", r.code, r.stderr.String(), exitLeaseLost)
	}
	// The leadership was won before began and lasts 2s from then: the
	// command (which ignores SIGTERM) is killed 300ms after the loss,
	// which comes 200ms before the end.
	if d := time.Since(began); d > 2*time.Second+time.Second {
		t.Errorf("the command ended %v after the gateway went, want before the leadership's end (2s) plus the kill delay", d)
	}
}
