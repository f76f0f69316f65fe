package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/leasegate/leasegate/client"
)

// Exit statuses of `leasegate lock` besides CMD's own (docs/client.md).
const (
	exitNotAcquired = 75  // EX_TEMPFAIL: another owner holds the lock
	exitLeaseLost   = 76  // the lease was lost while CMD ran; CMD was signalled
	exitNoCommand   = 127 // CMD could not be started (as in sh)
)

// maxWaitChunk is the longest single waiting acquire sent: the gateway's
// default max_wait_ms. Longer --wait values wait in several chunks.
const maxWaitChunk = 30 * time.Second

type lockFlags struct {
	url        string
	apiKey     string
	ttl        time.Duration
	wait       time.Duration
	owner      string
	lostSignal string
	killAfter  time.Duration
}

const lockUsage = `Usage: leasegate lock [flags] RESOURCE -- CMD [ARGS...]

Takes the lock on RESOURCE (waiting up to --wait), runs CMD with
LEASEGATE_TOKEN, LEASEGATE_RESOURCE, LEASEGATE_OWNER and LEASEGATE_EXPIRES_AT
in its environment, keeps the lease alive while CMD runs, releases it when
CMD exits, and exits with CMD's status. CMD runs in its own process group;
SIGINT and SIGTERM are forwarded to it.

Exit status: CMD's status (128+N if a signal N ended it); 75 the lock is
held by another owner; 76 the lease was lost while CMD ran (CMD was sent
--lost-signal); 127 CMD could not be started; 2 usage; 1 other errors.

Flags:
`

func cmdLock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	f := lockFlags{
		url:        "http://127.0.0.1:8080",
		ttl:        30 * time.Second,
		lostSignal: "TERM",
		killAfter:  10 * time.Second,
	}
	fs := flag.NewFlagSet("leasegate lock", flag.ContinueOnError)
	fs.StringVar(&f.url, "url", f.url, "gateway base URL")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (sent as Authorization: Bearer)")
	fs.DurationVar(&f.ttl, "ttl", f.ttl, "lease time, whole seconds; renewed every ttl/3 while CMD runs")
	fs.DurationVar(&f.wait, "wait", 0, "how long to wait for the lock when another owner holds it (0: fail at once)")
	fs.StringVar(&f.owner, "owner", "", "owner name (default host:pid:random); not read from the environment")
	fs.StringVar(&f.lostSignal, "lost-signal", f.lostSignal, "signal sent to CMD when the lease is lost (TERM, INT, HUP, KILL, USR1, USR2, QUIT)")
	fs.DurationVar(&f.killAfter, "kill-after", f.killAfter, "after --lost-signal, send KILL if CMD still runs this long (0: never)")
	fs.Usage = func() {
		fmt.Fprint(stderr, lockUsage)
		fs.PrintDefaults()
	}
	// LEASEGATE_OWNER is what CMD receives: a nested `leasegate lock` must
	// not pick it up as its own owner, or it would silently re-enter.
	env := func(k string) string {
		if k == "LEASEGATE_OWNER" {
			return ""
		}
		return getenv(k)
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	resource, argv, err := splitLockArgs(fs.Args())
	if err != nil {
		return usageError{err}
	}
	lostSig, err := parseSignal(f.lostSignal)
	if err != nil {
		return usageError{fmt.Errorf("--lost-signal: %w", err)}
	}
	if f.ttl < time.Second || f.ttl%time.Second != 0 {
		return usageError{fmt.Errorf("--ttl %v must be a whole number of seconds, at least 1s", f.ttl)}
	}
	if f.wait < 0 {
		return usageError{fmt.Errorf("--wait must not be negative")}
	}
	if f.owner == "" {
		f.owner = client.DefaultOwner()
	}
	var opts []client.Option
	if f.apiKey != "" {
		opts = append(opts, client.WithAPIKey(f.apiKey))
	}
	c := client.New(f.url, opts...)

	lease, err := acquireWaiting(ctx, c, resource, f)
	var na *client.NotAcquiredError
	switch {
	case errors.As(err, &na):
		return exitError{code: exitNotAcquired, msg: fmt.Sprintf(
			"lock %q is held by another owner (its lease ends in %v); not running the command", resource, na.RetryAfter.Round(time.Millisecond))}
	case err != nil:
		return fmt.Errorf("acquire %q: %w", resource, err)
	}

	// The lease is kept under its own context: a forwarded SIGINT must not
	// drop the lease while CMD is still shutting down.
	keep := c.KeepAlive(context.Background(), lease)
	code, lost := runLocked(ctx, argv, lease, keep, lostSig, f.killAfter, stdin, stdout, stderr)
	keep.Stop()

	// Release even after a loss: if only the renewals failed, the lease
	// may still be ours, and releasing it (this token only) frees the lock
	// sooner.
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rerr := c.Release(rctx, lease)
	if lost != nil {
		return exitError{code: exitLeaseLost, msg: fmt.Sprintf(
			"lease on %q lost while the command ran (%v); sent it SIG%s; its exit status was %d", resource, lost, strings.ToUpper(strings.TrimPrefix(f.lostSignal, "SIG")), code)}
	}
	if rerr != nil {
		fmt.Fprintf(stderr, "leasegate: warning: release %q: %v\n", resource, rerr)
	}
	if code == 0 {
		return nil
	}
	return exitError{code: code}
}

// splitLockArgs reads RESOURCE -- CMD [ARGS...] (the -- may be left out).
func splitLockArgs(rest []string) (string, []string, error) {
	if len(rest) == 0 {
		return "", nil, errors.New("missing RESOURCE and CMD: leasegate lock [flags] RESOURCE -- CMD [ARGS...]")
	}
	resource, cmd := rest[0], rest[1:]
	if len(cmd) > 0 && cmd[0] == "--" {
		cmd = cmd[1:]
	}
	if len(cmd) == 0 {
		return "", nil, errors.New("missing CMD: leasegate lock [flags] RESOURCE -- CMD [ARGS...]")
	}
	return resource, cmd, nil
}

// parseSignal reads TERM, SIGTERM, term or a number.
func parseSignal(s string) (syscall.Signal, error) {
	name := strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "SIG")
	if sig, ok := signalNames[name]; ok {
		return sig, nil
	}
	if n, err := strconv.Atoi(name); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, fmt.Errorf("unknown signal %q", s)
}

// acquireWaiting acquires, waiting up to f.wait in chunks the gateway
// accepts. Ctx ending stops the wait.
func acquireWaiting(ctx context.Context, c *client.Client, resource string, f lockFlags) (*client.Lease, error) {
	end := time.Now().Add(f.wait)
	for {
		wait := min(time.Until(end), maxWaitChunk)
		if wait < time.Millisecond {
			wait = 0
		}
		lease, err := c.Acquire(ctx, resource, f.ttl, client.WithOwner(f.owner), client.WithWait(wait))
		if err == nil || !errors.Is(err, client.ErrNotAcquired) || time.Until(end) <= 0 || ctx.Err() != nil {
			return lease, err
		}
	}
}

// runLocked runs argv while keep holds the lease. It returns CMD's exit
// status and, if the lease was lost while it ran, why.
func runLocked(ctx context.Context, argv []string, lease *client.Lease, keep *client.KeepAlive,
	lostSig syscall.Signal, killAfter time.Duration, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = append(os.Environ(),
		"LEASEGATE_TOKEN="+strconv.FormatInt(lease.Token, 10),
		"LEASEGATE_RESOURCE="+lease.Resource,
		"LEASEGATE_OWNER="+lease.Owner,
		"LEASEGATE_EXPIRES_AT="+lease.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	)
	// Own process group (unix): signals reach CMD once (from us), and
	// reach everything it started.
	ownProcessGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "leasegate: cannot run %q: %v\n", argv[0], err)
		return exitNoCommand, nil
	}
	group := func(sig os.Signal) { signalGroup(cmd, sig) }

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var lost error
	var kill <-chan time.Time
	ctxDone := ctx.Done()
	keepDone := keep.Done()
	for {
		select {
		case err := <-exited:
			return exitStatus(err), lost
		case s := <-sigs:
			group(s)
		case <-ctxDone:
			// Our context ends on SIGINT/SIGTERM too; if a signal is on
			// its way it is forwarded above, otherwise CMD gets SIGTERM.
			ctxDone = nil
			select {
			case s := <-sigs:
				group(s)
			case <-time.After(50 * time.Millisecond):
				group(syscall.SIGTERM)
			}
		case <-keepDone:
			keepDone = nil
			if errors.Is(keep.Err(), client.ErrLeaseLost) {
				lost = keep.Err()
				group(lostSig)
				if killAfter > 0 {
					kill = time.After(killAfter)
				}
			}
		case <-kill:
			group(syscall.SIGKILL)
		}
	}
}

// exitStatus is CMD's status as a shell reports it.
func exitStatus(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 1
}
