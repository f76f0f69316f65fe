package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/leasegate/leasegate/client"
)

const abuseUsage = `Usage:
  leasegate abuse list [--lock NAME] [--limit N] [--cursor C] [--all]
  leasegate abuse show USER_ID
  leasegate abuse clear USER_ID                 clear the user's flags and any ban
  leasegate abuse ban USER_ID --for DURATION [--reason TEXT]   --for is required
  leasegate abuse unban USER_ID
  leasegate abuse webhooks [--limit N]          the webhook outbox and its dead letters
  leasegate abuse backtest --lock NAME [--max-attempts N] [--ban-after-flags N]
      [--ban-seconds S] [--factor F] [--max-ban-seconds S] [--shadow=BOOL]
      [--since 24h|RFC3339] [--until RFC3339] [--user ID]... [--limit N] [--cursor C]
                                                what a candidate policy would have done

Every subcommand takes --url (LEASEGATE_URL, default http://127.0.0.1:8080),
--api-key (LEASEGATE_API_KEY, an ops key) and --json.
`

// clientFlags are the flags of every client-side subcommand.
type clientFlags struct {
	url    string
	apiKey string
	json   bool
}

func (f *clientFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "base URL of the gateway")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (sent as Authorization: Bearer)")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of a table")
}

func (f *clientFlags) client() *client.Client { return newClient(f.url, f.apiKey) }

// newClient is a client of the gateway at url, with apiKey unless it is "".
func newClient(url, apiKey string) *client.Client {
	if apiKey == "" {
		return client.New(url)
	}
	return client.New(url, client.WithAPIKey(apiKey))
}

// parseInterleaved parses flags that may come before or after the
// positional arguments ("abuse ban bob --for 1h"). The environment is
// applied once, before the command line.
func parseInterleaved(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer) ([]string, error) {
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return nil, err
	}
	var pos []string
	for fs.NArg() > 0 {
		rest := fs.Args()
		pos = append(pos, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err}
		}
	}
	return pos, nil
}

func cmdAbuse(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, abuseUsage)
		return usageError{errors.New("abuse needs a subcommand: list, show, clear, ban, unban or webhooks")}
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("leasegate abuse "+sub, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, abuseUsage+"\nFlags:\n"); fs.PrintDefaults() }
	var cf clientFlags
	cf.bind(fs)
	var (
		lock, cursor, reason string
		limit                int
		all                  bool
		banFor               time.Duration
		bf                   backtestFlags
	)
	switch sub {
	case "list":
		fs.StringVar(&lock, "lock", "", "only flags on this lock")
		fs.IntVar(&limit, "limit", 0, "page size (default: the gateway's, 50)")
		fs.StringVar(&cursor, "cursor", "", "continue after a previous page")
		fs.BoolVar(&all, "all", false, "follow the cursor to the last page")
	case "ban":
		fs.DurationVar(&banFor, "for", 0, "how long the ban lasts: required, whole seconds from 1s to 8760h (e.g. 1h, 24h)")
		fs.StringVar(&reason, "reason", "", "why (kept with the ban and in the audit record)")
	case "webhooks":
		fs.IntVar(&limit, "limit", 0, "dead letters to show (default: the gateway's, 50)")
	case "backtest":
		bf.bind(fs)
	case "show", "clear", "unban":
	case "help", "-h", "--help":
		fmt.Fprint(stdout, abuseUsage)
		return nil
	default:
		fmt.Fprint(stderr, abuseUsage)
		return usageError{fmt.Errorf("unknown abuse subcommand %q", sub)}
	}
	pos, err := parseInterleaved(fs, args, getenv, stderr)
	if err != nil {
		return err
	}
	wantArgs := 1
	if sub == "list" || sub == "webhooks" || sub == "backtest" {
		wantArgs = 0
	}
	if len(pos) != wantArgs {
		if wantArgs == 0 {
			return usageError{fmt.Errorf("abuse %s takes no arguments, got %q", sub, pos)}
		}
		return usageError{fmt.Errorf("abuse %s takes one USER_ID, got %d arguments", sub, len(pos))}
	}
	c := cf.client()
	out := &printer{w: stdout, json: cf.json}
	switch sub {
	case "list":
		return abuseList(ctx, c, out, client.ListFlaggedOptions{Lock: lock, Limit: limit, Cursor: cursor}, all)
	case "show":
		uf, err := c.GetFlagged(ctx, pos[0])
		if err != nil {
			return err
		}
		return out.userFlags(uf)
	case "clear":
		if err := c.ClearFlagged(ctx, pos[0]); err != nil {
			return err
		}
		return out.done(pos[0], "cleared", "cleared the flags and any ban of "+printable(pos[0]))
	case "ban":
		if banFor == 0 {
			return usageError{errors.New("abuse ban needs --for DURATION (e.g. --for 1h): a ban has no default length")}
		}
		if banFor < time.Second || banFor%time.Second != 0 {
			return usageError{fmt.Errorf("--for %v: must be whole seconds, at least 1s", banFor)}
		}
		b, err := c.BanUser(ctx, pos[0], banFor, reason)
		if err != nil {
			return err
		}
		if out.json {
			return out.encode(b)
		}
		fmt.Fprintf(stdout, "banned %s until %s\n", printable(pos[0]), stamp(b.BannedUntil))
		return nil
	case "unban":
		if err := c.Unban(ctx, pos[0]); err != nil {
			return err
		}
		return out.done(pos[0], "unbanned", "lifted the ban of "+printable(pos[0]))
	case "backtest":
		q, err := bf.query(fs)
		if err != nil {
			return err
		}
		bt, err := c.Backtest(ctx, q)
		if err != nil {
			return err
		}
		return out.backtest(bt)
	case "webhooks":
		st, err := c.WebhookStatus(ctx, limit)
		if err != nil {
			return err
		}
		return out.webhooks(st)
	}
	return nil
}

// webhooks prints the outbox's state and the dead letters.
func (p *printer) webhooks(st client.WebhookStatus) error {
	if p.json {
		return p.encode(st)
	}
	if !st.Enabled {
		fmt.Fprintln(p.w, "webhooks: not configured on this gateway (--webhook-url)")
	}
	fmt.Fprintf(p.w, "outbox: %d entries, %d pending delivery, %d dead letters shown\n", st.OutboxEntries, st.Pending, len(st.DeadLetters))
	if len(st.DeadLetters) == 0 {
		return nil
	}
	fmt.Fprintln(p.w)
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILED AT\tEVENT\tTYPE\tTRIES\tURL\tLAST ERROR")
	for _, d := range st.DeadLetters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", stamp(d.FailedAt), printable(d.ID), printable(d.Type),
			d.Tries, printable(d.URL), printable(d.Error))
	}
	return tw.Flush()
}

func abuseList(ctx context.Context, c *client.Client, out *printer, opts client.ListFlaggedOptions, all bool) error {
	var items []client.Flag
	var next *string
	for {
		p, err := c.ListFlagged(ctx, opts)
		if err != nil {
			return err
		}
		items = append(items, p.Items...)
		next = p.NextCursor
		if !all || next == nil {
			break
		}
		opts.Cursor = *next
	}
	if out.json {
		if items == nil {
			items = []client.Flag{}
		}
		return out.encode(client.FlagPage{Items: items, NextCursor: next})
	}
	if len(items) == 0 {
		fmt.Fprintln(out.w, "no flagged users")
		return nil
	}
	out.flagTable(items)
	if next != nil {
		fmt.Fprintf(out.w, "\nmore: leasegate abuse list --cursor %s\n", *next)
	}
	return nil
}

// printer writes tables or JSON.
type printer struct {
	w    io.Writer
	json bool
}

func (p *printer) encode(v any) error {
	enc := json.NewEncoder(p.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (p *printer) done(user, what, text string) error {
	if p.json {
		return p.encode(map[string]any{"user_id": user, what: true})
	}
	_, err := fmt.Fprintln(p.w, text)
	return err
}

func (p *printer) flagTable(items []client.Flag) {
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tLOCK\tTIMES\tPEAK\tFIRST FLAGGED\tLAST FLAGGED\tBANNED UNTIL")
	for _, f := range items {
		banned := "-"
		if f.BannedUntil != nil {
			banned = stamp(*f.BannedUntil)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", printable(f.UserID), printable(f.Lock),
			f.TimesFlagged, f.PeakAttempts, stamp(f.FirstFlaggedAt), stamp(f.LastFlaggedAt), banned)
	}
	_ = tw.Flush()
}

func (p *printer) userFlags(uf client.UserFlags) error {
	if p.json {
		return p.encode(uf)
	}
	fmt.Fprintf(p.w, "user:   %s\n", printable(uf.UserID))
	if uf.Ban != nil {
		fmt.Fprintf(p.w, "banned: until %s by %s (%s)", stamp(uf.Ban.BannedUntil), printable(uf.Ban.BannedBy), uf.Ban.Source)
		if uf.Ban.BannedAt != nil {
			fmt.Fprintf(p.w, " at %s", stamp(*uf.Ban.BannedAt))
		}
		if uf.Ban.Reason != "" {
			fmt.Fprintf(p.w, ": %s", printable(uf.Ban.Reason))
		}
		fmt.Fprintln(p.w)
	} else {
		fmt.Fprintln(p.w, "banned: no")
	}
	if len(uf.Flags) == 0 {
		fmt.Fprintln(p.w, "flags:  none")
		return nil
	}
	fmt.Fprintln(p.w)
	p.flagTable(uf.Flags)
	for _, f := range uf.Flags {
		p.evidence(f)
	}
	return nil
}

// evidence prints a flag's automatic ban count and the attempt times of
// the window that flagged (oldest first, as offsets from the first).
func (p *printer) evidence(f client.Flag) {
	fmt.Fprintf(p.w, "\n%s: automatic bans %d", printable(f.Lock), f.AutomaticBans)
	if len(f.AttemptsAt) == 0 {
		fmt.Fprintln(p.w, ", no attempt times recorded")
		return
	}
	first := f.AttemptsAt[0]
	fmt.Fprintf(p.w, ", %d attempts of the flagged window from %s:\n ", len(f.AttemptsAt), first.UTC().Format("2006-01-02 15:04:05.000Z"))
	for i, at := range f.AttemptsAt {
		if i > 0 && i%10 == 0 {
			fmt.Fprint(p.w, "\n ")
		}
		fmt.Fprintf(p.w, " +%.3fs", at.Sub(first).Seconds())
	}
	fmt.Fprintln(p.w)
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// printable quotes s when it holds anything a terminal could act on or a
// table could not show (control characters, tabs, invalid UTF-8, spaces at
// either end).
func printable(s string) string {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsPrint(r) || r == unicode.ReplacementChar
	}) {
		return strconv.Quote(s)
	}
	return s
}
