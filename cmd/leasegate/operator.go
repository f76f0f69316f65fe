package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

const auditUsage = `Usage:
  leasegate audit [--limit N] [--cursor C]    the audit trail of operator actions, newest first (ops)

Flags --url (LEASEGATE_URL), --api-key (LEASEGATE_API_KEY, an ops key) and --json.
`

const watchUsage = `Usage:
  leasegate watch RESOURCE    print the changes of a lock as they happen, until interrupted

Flags --url (LEASEGATE_URL), --api-key (LEASEGATE_API_KEY) and --json (one JSON object a line).
`

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("leasegate audit", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage+"\nFlags:\n"); fs.PrintDefaults() }
	var cf clientFlags
	cf.bind(fs)
	limit := fs.Int("limit", 50, "records per page (1..1000)")
	cursor := fs.String("cursor", "", "continue after a previous page")
	pos, err := parseInterleaved(fs, args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{fmt.Errorf("audit takes no arguments, got %q", pos)}
	}
	page, err := cf.client().Audit(ctx, *limit, *cursor)
	if err != nil {
		return err
	}
	if cf.json {
		enc := json.NewEncoder(stdout)
		return enc.Encode(map[string]any{"items": page.Items, "next_cursor": page.NextCursor})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tACTOR\tACTION\tTARGET\tREASON\tDETAILS\tREQUEST")
	for _, r := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", leasegate.FormatTime(r.At), printable(r.Actor), r.Action,
			printable(r.Target), printable(r.Reason), printable(r.Details.String()), printable(r.RequestID))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return nil
}

func cmdWatch(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("leasegate watch", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(stderr, watchUsage+"\nFlags:\n"); fs.PrintDefaults() }
	var cf clientFlags
	cf.bind(fs)
	pos, err := parseInterleaved(fs, args, getenv, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("watch takes one RESOURCE")}
	}
	enc := json.NewEncoder(stdout)
	return cf.client().Watch(ctx, pos[0], func(e client.Event) error {
		if cf.json {
			return enc.Encode(map[string]any{"event": e.Kind, "lock": e.Lock, "at": e.At})
		}
		if e.Lock == nil {
			_, err := fmt.Fprintf(stdout, "%s  %-14s %s is free\n", leasegate.FormatTime(time.Now()), e.Kind, printable(pos[0]))
			return err
		}
		_, err := fmt.Fprintf(stdout, "%s  %-14s owner=%s token=%d expires_at=%s\n", leasegate.FormatTime(e.At), e.Kind,
			printable(e.Lock.Owner), e.Lock.Token, leasegate.FormatTime(e.Lock.ExpiresAt))
		return err
	})
}
