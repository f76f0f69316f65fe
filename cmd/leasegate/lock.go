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

// heldTexts are the words of a command that runs CMD under a lease: its
// name and usage, and what its flags call what is held (a lock's lease
// or a semaphore's permit).
type heldTexts struct {
	command, usage  string
	ttl, wait, lost string
}

var lockTexts = heldTexts{command: "leasegate lock", usage: lockUsage,
	ttl: "lease time", wait: "for the lock when another owner holds it", lost: "lease"}

// newLockFlags is the flag set of `leasegate lock` or `leasegate
// semaphore` (t says which), with the flags they share registered with
// their defaults; its usage goes to stderr.
func newLockFlags(t heldTexts, stderr io.Writer) (*flag.FlagSet, *lockFlags) {
	fs := flag.NewFlagSet(t.command, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(stderr, t.usage)
		fs.PrintDefaults()
	}
	f := &lockFlags{
		url:        "http://127.0.0.1:8080",
		ttl:        30 * time.Second,
		lostSignal: "TERM",
		killAfter:  10 * time.Second,
	}
	fs.StringVar(&f.url, "url", f.url, "gateway base URL")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (sent as Authorization: Bearer)")
	fs.DurationVar(&f.ttl, "ttl", f.ttl, t.ttl+", whole seconds; renewed every ttl/3 while CMD runs")
	fs.DurationVar(&f.wait, "wait", 0, "how long to wait "+t.wait+" (0: fail at once)")
	fs.StringVar(&f.owner, "owner", "", "owner name (default host:pid:random); not read from the environment")
	fs.StringVar(&f.lostSignal, "lost-signal", f.lostSignal, "signal sent to CMD when the "+t.lost+" is lost (TERM, INT, HUP, KILL, USR1, USR2, QUIT)")
	fs.DurationVar(&f.killAfter, "kill-after", f.killAfter, "after --lost-signal, send KILL if CMD still runs this long (0: never)")
	return fs, f
}

// withoutOwner is getenv without LEASEGATE_OWNER: that is what CMD
// receives, and a nested `leasegate lock` must not pick it up as its own
// owner, or it would silently re-enter.
func withoutOwner(getenv func(string) string) func(string) string {
	return func(k string) string {
		if k == "LEASEGATE_OWNER" {
			return ""
		}
		return getenv(k)
	}
}

// check validates the shared flags, fills in the default owner and
// returns the --lost-signal and the client to the gateway.
func (f *lockFlags) check() (syscall.Signal, *client.Client, error) {
	lostSig, err := parseSignal(f.lostSignal)
	if err != nil {
		return 0, nil, usageError{fmt.Errorf("--lost-signal: %w", err)}
	}
	if f.ttl < time.Second || f.ttl%time.Second != 0 {
		return 0, nil, usageError{fmt.Errorf("--ttl %v must be a whole number of seconds, at least 1s", f.ttl)}
	}
	if f.wait < 0 {
		return 0, nil, usageError{fmt.Errorf("--wait must not be negative")}
	}
	if f.owner == "" {
		f.owner = client.DefaultOwner()
	}
	return lostSig, newClient(f.url, f.apiKey), nil
}

func cmdLock(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs, f := newLockFlags(lockTexts, stderr)
	if err := parseFlags(fs, args, withoutOwner(getenv), stderr); err != nil {
		return err
	}
	resource, argv, err := splitHeldArgs("", fs.Args(), "RESOURCE", "leasegate lock [flags] RESOURCE -- CMD [ARGS...]")
	if err != nil {
		return usageError{err}
	}
	lostSig, c, err := f.check()
	if err != nil {
		return err
	}

	lease, err := acquireWaiting(ctx, f.wait, func(wait time.Duration) (*client.Lease, error) {
		return c.Acquire(ctx, resource, f.ttl, client.WithOwner(f.owner), client.WithWait(wait))
	})
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
	return runHeld(ctx, argv, held{
		lease:    lease,
		keep:     c.KeepAlive(context.Background(), lease),
		release:  func(ctx context.Context) error { return c.Release(ctx, lease) },
		name:     fmt.Sprintf("lease on %q", resource),
		released: fmt.Sprintf("%q", resource),
	}, f, lostSig, stdin, stdout, stderr)
}

// held is what CMD runs under: a lock's lease or a semaphore's permit.
type held struct {
	// lease is what CMD's environment describes.
	lease *client.Lease
	// keep renews it; release gives it back.
	keep    *client.KeepAlive
	release func(context.Context) error
	// name names it in the message of a loss, released in the warning
	// of a failed release.
	name, released string
	// env is added to CMD's environment (e.g. LEASEGATE_TERM).
	env []string
}

// runHeld runs argv while h.keep holds the lease, releases it, and
// returns CMD's status as the command's (or exitLeaseLost).
func runHeld(ctx context.Context, argv []string, h held, f *lockFlags, lostSig syscall.Signal, stdin io.Reader, stdout, stderr io.Writer) error {
	code, lost := runLocked(ctx, argv, h.lease, h.env, h.keep, lostSig, f.killAfter, stdin, stdout, stderr)
	h.keep.Stop()

	// Release even after a loss: if only the renewals failed, the lease
	// may still be ours, and releasing it (this token only) frees the lock
	// sooner.
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rerr := h.release(rctx)
	if lost != nil {
		return exitError{code: exitLeaseLost, msg: fmt.Sprintf(
			"%s lost while the command ran (%v); sent it SIG%s; its exit status was %d", h.name, lost, strings.ToUpper(strings.TrimPrefix(f.lostSignal, "SIG")), code)}
	}
	if rerr != nil {
		fmt.Fprintf(stderr, "leasegate: warning: release %s: %v\n", h.released, rerr)
	}
	if code == 0 {
		return nil
	}
	return exitError{code: code}
}

// splitHeldArgs reads NAME -- CMD [ARGS...] (the -- may be left out) of
// a command whose synopsis is synopsis and whose NAME is arg; name, when
// not "", was given before the flags and rest starts at CMD.
func splitHeldArgs(name string, rest []string, arg, synopsis string) (string, []string, error) {
	if name == "" {
		if len(rest) == 0 {
			return "", nil, fmt.Errorf("missing %s and CMD: %s", arg, synopsis)
		}
		name, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return "", nil, errors.New("missing CMD: " + synopsis)
	}
	return name, rest, nil
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

// acquireWaiting calls acquire with waits the gateway accepts until it
// succeeds, fails otherwise than ErrNotAcquired, or wait has passed.
// Ctx ending stops the wait.
func acquireWaiting[T any](ctx context.Context, wait time.Duration, acquire func(wait time.Duration) (T, error)) (T, error) {
	end := time.Now().Add(wait)
	for {
		wait := min(time.Until(end), maxWaitChunk)
		if wait < time.Millisecond {
			wait = 0
		}
		v, err := acquire(wait)
		if err == nil || !errors.Is(err, client.ErrNotAcquired) || time.Until(end) <= 0 || ctx.Err() != nil {
			return v, err
		}
	}
}

// runLocked runs argv while keep holds the lease. It returns CMD's exit
// status and, if the lease was lost while it ran, why.
func runLocked(ctx context.Context, argv []string, lease *client.Lease, env []string, keep *client.KeepAlive,
	lostSig syscall.Signal, killAfter time.Duration, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.Env = append(os.Environ(),
		"LEASEGATE_TOKEN="+strconv.FormatInt(lease.Token, 10),
		"LEASEGATE_RESOURCE="+lease.Resource,
		"LEASEGATE_OWNER="+lease.Owner,
		"LEASEGATE_EXPIRES_AT="+lease.ExpiresAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	)
	cmd.Env = append(cmd.Env, env...)
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
