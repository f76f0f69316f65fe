package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

const electUsage = `Usage: leasegate elect [flags] NAME --candidate C [--value V] -- CMD [ARGS...]

Campaigns for the leadership of election NAME (waiting in line up to
--wait), runs CMD only while it leads, with LEASEGATE_TERM (the term, a
fencing token), LEASEGATE_ELECTION, LEASEGATE_OWNER (the candidate) and
LEASEGATE_EXPIRES_AT in its environment, renews the leadership every
ttl/3, and resigns when CMD exits. As soon as the leadership is lost (a
renewal finds another leader or a new term) or cannot be confirmed
before it would end by this machine's clock (--ttl/10 before), CMD gets
--lost-signal (TERM), then KILL after --kill-after. CMD runs in its own
process group; SIGINT and SIGTERM are forwarded to it.

Exit status: CMD's status (128+N if a signal N ended it); 75 not elected
within --wait; 76 the leadership was lost while CMD ran; 127 CMD could not
be started; 2 usage; 1 other errors.

Flags:
`

var electTexts = heldTexts{command: "leasegate elect", usage: electUsage,
	ttl: "leadership's lease time", wait: "in line for the leadership", lost: "leadership"}

// defaultElectWait is --wait of `leasegate elect`: a standby candidate
// waits until it leads or is stopped.
const defaultElectWait = 365 * 24 * time.Hour

func cmdElect(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs, f := newLockFlags(electTexts, stderr)
	f.wait = defaultElectWait
	fs.Lookup("wait").DefValue = defaultElectWait.String()
	fs.StringVar(&f.owner, "candidate", "", "candidate name (default host:pid:random); the same as --owner")
	value := fs.String("value", "", "value proclaimed while leading (e.g. this node's address), 0..4096 bytes")
	lockDelay := fs.Duration("lock-delay", 0, "after this leadership ends by expiry, no one else is elected for this long (0..60s)")
	// NAME may come before the flags, as in the usage line.
	var name string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, withoutOwner(getenv), stderr); err != nil {
		return err
	}
	rest := fs.Args()
	if name == "" {
		if len(rest) == 0 {
			return usageError{errors.New("missing NAME and CMD: leasegate elect [flags] NAME --candidate C -- CMD [ARGS...]")}
		}
		name, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return usageError{errors.New("missing CMD: leasegate elect [flags] NAME --candidate C -- CMD [ARGS...]")}
	}
	if len(*value) > leasegate.MaxLeaderValue {
		return usageError{fmt.Errorf("--value is %d bytes, at most %d", len(*value), leasegate.MaxLeaderValue)}
	}
	if *lockDelay < 0 || *lockDelay > time.Minute {
		return usageError{fmt.Errorf("--lock-delay %v must be from 0 to 60s", *lockDelay)}
	}
	lostSig, c, err := f.check()
	if err != nil {
		return err
	}

	req := leasegate.CampaignRequest{Name: name, Candidate: f.owner, Value: *value, TTL: f.ttl, LockDelay: *lockDelay}
	type won struct {
		ld   client.Leader
		keep *client.KeepAlive
	}
	w, err := acquireWaiting(ctx, f.wait, func(wait time.Duration) (won, error) {
		r := req
		r.Wait = wait
		ld, keep, err := c.Lead(ctx, r)
		return won{ld, keep}, err
	})
	var ne *client.NotElectedError
	switch {
	case errors.As(err, &ne):
		who := "nobody (a lock delay runs)"
		if ne.Current != nil {
			who = fmt.Sprintf("%q (term %d)", ne.Current.Candidate, ne.Current.Term)
		}
		return exitError{code: exitNotAcquired, msg: fmt.Sprintf(
			"election %q is led by %s; not running the command", name, who)}
	case err != nil:
		return fmt.Errorf("campaign for %q: %w", name, err)
	}
	ld := w.ld
	return runHeld(ctx, rest, held{
		lease: &client.Lease{Resource: name, Owner: ld.Candidate, Token: ld.Term,
			AcquiredAt: ld.ElectedAt, ExpiresAt: ld.ExpiresAt, TTL: f.ttl},
		keep:     w.keep,
		release:  func(ctx context.Context) error { return c.Resign(ctx, ld) },
		name:     fmt.Sprintf("leadership of %q (term %d)", name, ld.Term),
		released: fmt.Sprintf("(resign) %q", name),
		env:      []string{"LEASEGATE_TERM=" + strconv.FormatInt(ld.Term, 10), "LEASEGATE_ELECTION=" + name},
	}, f, lostSig, stdin, stdout, stderr)
}
