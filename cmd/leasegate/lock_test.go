package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/server"
)

// lockTestGateway runs a real gateway in-process (embedded Redis).
type lockTestGateway struct {
	url string
	s   *server.Server
	l   *redislock.Locker
}

func startLockTestGateway(t *testing.T) *lockTestGateway {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	cfg := server.DefaultConfig()
	s := gatewaytest.Start(t, cfg, nil)
	return &lockTestGateway{url: gatewaytest.URL(s), s: s, l: redislock.New(s.Redis(), redislock.Config{Prefix: cfg.KeyPrefix})}
}

type lockRun struct {
	code           int
	stdout, stderr *logtest.Buffer
}

// runCommand runs `leasegate <command>` with args in the background.
func runCommand(ctx context.Context, env map[string]string, command string, args ...string) (*lockRun, <-chan struct{}) {
	r := &lockRun{stdout: &logtest.Buffer{}, stderr: &logtest.Buffer{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.code = run(ctx, append([]string{command}, args...), strings.NewReader(""), r.stdout, r.stderr,
			func(k string) string { return env[k] })
	}()
	return r, done
}

// runCommandNow runs `leasegate <command>` with args to its end.
func runCommandNow(t *testing.T, env map[string]string, command string, args ...string) *lockRun {
	t.Helper()
	r, done := runCommand(context.Background(), env, command, args...)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("leasegate %s did not finish within 20s", command)
	}
	return r
}

func TestLockRunsTheCommandUnderTheLock(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	c := client.New(g.url)

	t.Run("passes the lease in the environment and releases at exit", func(t *testing.T) {
		r := runCommandNow(t, env, "lock", "--owner", "cron-1", "job one", "--",
			"sh", "-c", `echo "$LEASEGATE_TOKEN|$LEASEGATE_RESOURCE|$LEASEGATE_OWNER|$LEASEGATE_EXPIRES_AT"`)
		if r.code != 0 {
			t.Fatalf("got exit %d (stderr %q), want 0", r.code, r.stderr.String())
		}
		parts := strings.Split(strings.TrimSpace(r.stdout.String()), "|")
		if len(parts) != 4 {
			t.Fatalf("got %q, want token|resource|owner|expires_at", r.stdout.String())
		}
		if tok, err := strconv.ParseInt(parts[0], 10, 64); err != nil || tok <= 0 {
			t.Errorf("got token %q, want a positive integer", parts[0])
		}
		if parts[1] != "job one" || parts[2] != "cron-1" {
			t.Errorf("got resource %q owner %q, want \"job one\" and cron-1", parts[1], parts[2])
		}
		if _, err := time.Parse(time.RFC3339Nano, parts[3]); err != nil || !strings.HasSuffix(parts[3], "Z") {
			t.Errorf("got expires_at %q, want RFC 3339 UTC", parts[3])
		}
		if _, err := c.Status(context.Background(), "job one"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("after exit: status got %v, want ErrNotFound (released)", err)
		}
	})

	t.Run("propagates the exit status", func(t *testing.T) {
		r := runCommandNow(t, env, "lock", "job-exit", "--", "sh", "-c", "exit 7")
		if r.code != 7 {
			t.Fatalf("got exit %d, want 7", r.code)
		}
		if _, err := c.Status(context.Background(), "job-exit"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("after a failing command: status got %v, want ErrNotFound (released)", err)
		}
	})

	t.Run("a command that cannot start exits 127 and releases", func(t *testing.T) {
		r := runCommandNow(t, env, "lock", "job-missing", "--", "/nonexistent/leasegate-test-cmd")
		if r.code != 127 {
			t.Fatalf("got exit %d, want 127", r.code)
		}
		if _, err := c.Status(context.Background(), "job-missing"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("status got %v, want ErrNotFound", err)
		}
	})
}

func TestLockContention(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	c := client.New(g.url)
	holder, err := c.Acquire(context.Background(), "busy", time.Minute, client.WithOwner("other"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("exits 75 without running the command", func(t *testing.T) {
		r := runCommandNow(t, env, "lock", "busy", "--", "sh", "-c", "echo ran")
		if r.code != exitNotAcquired {
			t.Fatalf("got exit %d, want %d", r.code, exitNotAcquired)
		}
		if strings.Contains(r.stdout.String(), "ran") {
			t.Error("the command ran without the lock")
		}
		if !strings.Contains(r.stderr.String(), "held by another owner") {
			t.Errorf("got stderr %q, want a clear message", r.stderr.String())
		}
	})

	t.Run("with --wait runs the command once the holder releases", func(t *testing.T) {
		r, done := runCommand(context.Background(), env, "lock", "--wait", "10s", "busy", "--", "sh", "-c", "echo ran")
		// Release once the CLI's acquire is queued, read back from the
		// waiters gauge, so the wake-up path is the one exercised.
		waitMetric(t, g.url, "leasegate_lock_waiters 1")
		if err := c.Release(context.Background(), holder); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("did not finish")
		}
		if r.code != 0 || strings.TrimSpace(r.stdout.String()) != "ran" {
			t.Fatalf("got exit %d stdout %q stderr %q, want 0 and ran", r.code, r.stdout.String(), r.stderr.String())
		}
	})
}

func TestLockLeaseLossSignalsTheCommand(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	r, done := runCommand(context.Background(), env, "lock", "--ttl", "2s", "--lost-signal", "USR1", "--kill-after", "5s", "fragile", "--",
		"sh", "-c", `trap 'echo got-usr1; exit 0' USR1; echo started; while :; do sleep 0.05; done`)
	r.waitStarted(t)
	key, _ := g.l.Keys("fragile")
	if err := g.s.Redis().Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("leasegate lock did not finish within 10s of the loss")
	}
	if r.code != exitLeaseLost {
		t.Errorf("got exit %d, want %d", r.code, exitLeaseLost)
	}
	if !strings.Contains(r.stdout.String(), "got-usr1") {
		t.Errorf("got stdout %q, want the command to have received USR1", r.stdout.String())
	}
	if !strings.Contains(r.stderr.String(), "lost") {
		t.Errorf("got stderr %q, want a clear loss message", r.stderr.String())
	}
}

func TestLockForwardsTerminationToTheCommand(t *testing.T) {
	t.Parallel()
	g := startLockTestGateway(t)
	env := map[string]string{"LEASEGATE_URL": g.url}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, done := runCommand(ctx, env, "lock", "--ttl", "3s", "--owner", "long-job", "interrupted", "--",
		"sh", "-c", `trap 'echo got-term; exit 143' TERM; echo started; while :; do sleep 0.05; done`)
	r.waitStarted(t)
	// The lease outlives its 3s TTL while the command runs: read back
	// every 50ms for 4s, each reading held by long-job (real time must
	// pass: the keep-alive runs on it). Three seconds, not one: a renewal
	// gets a third of the TTL, and under the race detector beside CI's
	// staticcheck and fuzz a renewal can take longer than 333 ms.
	started := time.Now()
	for {
		st, err := client.New(g.url).Status(context.Background(), "interrupted")
		if err != nil || st.Owner != "long-job" {
			t.Fatalf("while running after %v: got %+v, %v; want held by long-job", time.Since(started), st, err)
		}
		if time.Since(started) >= 4*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not finish after termination")
	}
	if r.code != 143 || !strings.Contains(r.stdout.String(), "got-term") {
		t.Errorf("got exit %d stdout %q, want 143 after the command got TERM", r.code, r.stdout.String())
	}
	if _, err := client.New(g.url).Status(context.Background(), "interrupted"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("status got %v, want released", err)
	}
}

func TestLockUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"res"},
		{"res", "--"},
		{"--ttl", "1500ms", "res", "--", "true"},
		{"--lost-signal", "NOPE", "res", "--", "true"},
	} {
		r := runCommandNow(t, nil, "lock", args...)
		if r.code != 2 {
			t.Errorf("args %q: got exit %d, want 2 (usage)", args, r.code)
		}
	}
}

// waitMetric reads the gateway's /metrics until it has line; 10 s only
// guards a hang.
func waitMetric(t *testing.T, base, line string) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("%q in /metrics", line), func() bool {
		res, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		return strings.Contains(string(b), line)
	})
}

// waitStarted waits until the command has printed "started"; 10 s only
// guards a hang.
func (r *lockRun) waitStarted(t *testing.T) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, "the command prints started", func() bool {
		return strings.Contains(r.stdout.String(), "started")
	})
}
