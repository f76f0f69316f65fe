package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
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

var semaphoreTexts = heldTexts{command: "leasegate semaphore", usage: semaphoreUsage,
	ttl: "permit lease time", wait: "for a permit when all are taken", lost: "permit"}

func cmdSemaphore(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs, f := newLockFlags(semaphoreTexts, stderr)
	limit := 0
	fs.IntVar(&limit, "limit", 0, "how many holders the semaphore allows at once (1..10000, required)")
	// NAME may come before the flags (leasegate semaphore NAME --limit N
	// -- CMD): the flag package stops at the first argument, so parse
	// again after it.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, withoutOwner(getenv), stderr); err != nil {
		return err
	}
	name, rest, err := splitHeldArgs(name, fs.Args(), "NAME", "leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]")
	if err != nil {
		return usageError{err}
	}
	if limit < 1 || limit > 10000 {
		return usageError{fmt.Errorf("--limit %d must be from 1 to 10000", limit)}
	}
	lostSig, c, err := f.check()
	if err != nil {
		return err
	}

	permit, err := acquireWaiting(ctx, f.wait, func(wait time.Duration) (*client.Permit, error) {
		return c.AcquirePermit(ctx, name, limit, f.ttl, client.WithOwner(f.owner), client.WithWait(wait))
	})
	var full *client.SemaphoreFullError
	switch {
	case errors.As(err, &full):
		return exitError{code: exitNotAcquired, msg: fmt.Sprintf(
			"every permit of semaphore %q is taken (%d of %d; the first ends in %v); not running the command",
			name, full.Holders, full.Limit, full.RetryAfter.Round(time.Millisecond))}
	case errors.Is(err, leasegate.ErrLimitMismatch):
		return usageError{fmt.Errorf("semaphore %q: %w", name, err)}
	case err != nil:
		return fmt.Errorf("acquire a permit of %q: %w", name, err)
	}

	return runHeld(ctx, rest, held{
		lease: &client.Lease{Resource: permit.Name, Owner: permit.Owner, Token: permit.Token,
			AcquiredAt: permit.AcquiredAt, ExpiresAt: permit.ExpiresAt, TTL: permit.TTL},
		keep:     c.KeepPermitAlive(context.Background(), permit),
		release:  func(ctx context.Context) error { return c.ReleasePermit(ctx, permit) },
		name:     fmt.Sprintf("permit of %q", name),
		released: fmt.Sprintf("the permit of %q", name),
	}, f, lostSig, stdin, stdout, stderr)
}
