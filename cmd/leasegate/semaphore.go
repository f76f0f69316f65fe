package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leasegate/leasegate/client"
)

const semaphoreUsage = `Usage: leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]

Takes one of the N permits of semaphore NAME (waiting up to --wait), runs
CMD as 'leasegate lock' does (LEASEGATE_TOKEN, LEASEGATE_RESOURCE = NAME,
LEASEGATE_OWNER and LEASEGATE_EXPIRES_AT in its environment), keeps the
permit alive while CMD runs, gives it back when CMD exits, and exits with
CMD's status. At most N such commands run at once across every host.

Exit status: CMD's status (128+N if a signal N ended it); 75 every permit
is taken; 76 the permit was lost while CMD ran (CMD was sent
--lost-signal); 127 CMD could not be started; 2 usage (also a --limit
that differs from the limit in force); 1 other errors.

Flags:
`

func cmdSemaphore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	f := lockFlags{
		url:        "http://127.0.0.1:8080",
		ttl:        30 * time.Second,
		lostSignal: "TERM",
		killAfter:  10 * time.Second,
	}
	limit := 0
	fs := flag.NewFlagSet("leasegate semaphore", flag.ContinueOnError)
	fs.StringVar(&f.url, "url", f.url, "gateway base URL")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (sent as Authorization: Bearer)")
	fs.IntVar(&limit, "limit", 0, "how many holders the semaphore allows at once (1..10000, required)")
	fs.DurationVar(&f.ttl, "ttl", f.ttl, "permit lease time, whole seconds; renewed every ttl/3 while CMD runs")
	fs.DurationVar(&f.wait, "wait", 0, "how long to wait for a permit when all are taken (0: fail at once)")
	fs.StringVar(&f.owner, "owner", "", "owner name (default host:pid:random); not read from the environment")
	fs.StringVar(&f.lostSignal, "lost-signal", f.lostSignal, "signal sent to CMD when the permit is lost (TERM, INT, HUP, KILL, USR1, USR2, QUIT)")
	fs.DurationVar(&f.killAfter, "kill-after", f.killAfter, "after --lost-signal, send KILL if CMD still runs this long (0: never)")
	fs.Usage = func() {
		fmt.Fprint(stderr, semaphoreUsage)
		fs.PrintDefaults()
	}
	env := func(k string) string {
		if k == "LEASEGATE_OWNER" {
			return ""
		}
		return getenv(k)
	}
	// NAME may come before the flags (leasegate semaphore NAME --limit N
	// -- CMD): the flag package stops at the first argument, so parse
	// again after it.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, env, stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if name == "" {
		if len(rest) == 0 {
			return usageError{errors.New("missing NAME and CMD: leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]")}
		}
		name, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return usageError{errors.New("missing CMD: leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]")}
	}
	if limit < 1 || limit > 10000 {
		return usageError{fmt.Errorf("--limit %d must be from 1 to 10000", limit)}
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

	permit, err := acquirePermitWaiting(ctx, c, name, limit, f)
	var full *client.SemaphoreFullError
	switch {
	case errors.As(err, &full):
		return exitError{code: exitNotAcquired, msg: fmt.Sprintf(
			"every permit of semaphore %q is taken (%d of %d; the first ends in %v); not running the command",
			name, full.Holders, full.Limit, full.RetryAfter.Round(time.Millisecond))}
	case errors.Is(err, client.ErrLimitMismatch):
		return usageError{fmt.Errorf("semaphore %q: %w", name, err)}
	case err != nil:
		return fmt.Errorf("acquire a permit of %q: %w", name, err)
	}

	keep := c.KeepPermitAlive(context.Background(), permit)
	lease := &client.Lease{Resource: permit.Name, Owner: permit.Owner, Token: permit.Token,
		AcquiredAt: permit.AcquiredAt, ExpiresAt: permit.ExpiresAt, TTL: permit.TTL}
	code, lost := runLocked(ctx, rest, lease, keep, lostSig, f.killAfter, stdin, stdout, stderr)
	keep.Stop()

	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rerr := c.ReleasePermit(rctx, permit)
	if lost != nil {
		return exitError{code: exitLeaseLost, msg: fmt.Sprintf(
			"permit of %q lost while the command ran (%v); sent it SIG%s; its exit status was %d", name, lost, strings.ToUpper(strings.TrimPrefix(f.lostSignal, "SIG")), code)}
	}
	if rerr != nil {
		fmt.Fprintf(stderr, "leasegate: warning: release the permit of %q: %v\n", name, rerr)
	}
	if code == 0 {
		return nil
	}
	return exitError{code: code}
}

// acquirePermitWaiting acquires a permit, waiting up to f.wait in chunks
// the gateway accepts.
func acquirePermitWaiting(ctx context.Context, c *client.Client, name string, limit int, f lockFlags) (*client.Permit, error) {
	end := time.Now().Add(f.wait)
	for {
		wait := min(time.Until(end), maxWaitChunk)
		if wait < time.Millisecond {
			wait = 0
		}
		p, err := c.AcquirePermit(ctx, name, limit, f.ttl, client.WithOwner(f.owner), client.WithWait(wait))
		if err == nil || !errors.Is(err, client.ErrNotAcquired) || time.Until(end) <= 0 || ctx.Err() != nil {
			return p, err
		}
	}
}
