package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/leasegate/leasegate"
)

// backtestFlags are the flags of "abuse backtest": the candidate's
// policy-file fields (only those given are sent; the rest stay the
// lock's policy in force), the range and the users.
type backtestFlags struct {
	lock, since, until string
	cursor             string
	users              multiFlag
	limit              int
	maxAttempts        int
	banAfter           int
	banSeconds         int
	maxBanSeconds      int
	rolling            int
	factor             float64
	shadow             bool
}

// multiFlag is a flag that may be given many times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func (b *backtestFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&b.lock, "lock", "", "the user lock (required)")
	fs.StringVar(&b.since, "since", "", "start of the range: a duration ago (24h) or an RFC 3339 time (default: the whole log)")
	fs.StringVar(&b.until, "until", "", "end of the range: a duration ago or an RFC 3339 time (default: now)")
	fs.Var(&b.users, "user", "only this user (repeatable)")
	fs.IntVar(&b.limit, "limit", 0, "users shown per list (default: the gateway's, 100)")
	fs.StringVar(&b.cursor, "cursor", "", "go on after a previous answer's next_cursor")
	fs.IntVar(&b.maxAttempts, "max-attempts", 0, "candidate max_attempts")
	fs.IntVar(&b.banAfter, "ban-after-flags", 0, "candidate ban_after_flags")
	fs.IntVar(&b.banSeconds, "ban-seconds", 0, "candidate ban_seconds")
	fs.IntVar(&b.maxBanSeconds, "max-ban-seconds", 0, "candidate max_ban_seconds")
	fs.Float64Var(&b.factor, "factor", 0, "candidate factor")
	fs.IntVar(&b.rolling, "rolling-window-seconds", 0, "candidate rolling_window_seconds (1..86400)")
	fs.BoolVar(&b.shadow, "shadow", false, "candidate shadow")
}

// query is the request: the candidate holds the policy flags given.
func (b *backtestFlags) query(fs *flag.FlagSet) (leasegate.BacktestQuery, error) {
	if b.lock == "" {
		return leasegate.BacktestQuery{}, usageError{fmt.Errorf("abuse backtest needs --lock NAME")}
	}
	q := leasegate.BacktestQuery{Lock: b.lock, Users: b.users, Limit: b.limit, Cursor: b.cursor}
	pol := map[string]any{}
	fields := map[string]any{"max-attempts": b.maxAttempts, "ban-after-flags": b.banAfter, "ban-seconds": b.banSeconds,
		"max-ban-seconds": b.maxBanSeconds, "factor": b.factor, "shadow": b.shadow, "rolling-window-seconds": b.rolling}
	fs.Visit(func(f *flag.Flag) {
		if v, ok := fields[f.Name]; ok {
			pol[strings.ReplaceAll(f.Name, "-", "_")] = v
		}
	})
	raw, err := json.Marshal(pol)
	if err != nil {
		return q, err
	}
	q.Policy = raw
	for _, t := range []struct {
		name, v string
		to      *time.Time
	}{{"since", b.since, &q.Since}, {"until", b.until, &q.Until}} {
		if t.v == "" {
			continue
		}
		if d, err := time.ParseDuration(t.v); err == nil {
			*t.to = time.Now().Add(-d)
		} else if *t.to, err = time.Parse(time.RFC3339Nano, t.v); err != nil {
			return q, usageError{fmt.Errorf("--%s %q: must be a duration (24h) or an RFC 3339 time", t.name, t.v)}
		}
	}
	return q, nil
}

// backtest prints the summary table and the users that differ.
func (p *printer) backtest(bt leasegate.Backtest) error {
	if p.json {
		return p.encode(bt)
	}
	fmt.Fprintf(p.w, "lock %s, %s to %s\n\n", printable(bt.Lock), stamp(bt.Since.Time), stamp(bt.Until.Time))
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	r, in, c := bt.Recorded, bt.InForce, bt.Candidate
	fmt.Fprintln(tw, "\tRECORDED\tIN FORCE\tCANDIDATE")
	fmt.Fprintf(tw, "policy\t\t%s\t%s\n", policyText(in), policyText(c))
	fmt.Fprintf(tw, "attempts\t%d\t\t\n", r.Attempts)
	fmt.Fprintf(tw, "users\t%d\t\t\n", r.Users)
	fmt.Fprintf(tw, "windows\t%d\t\t\n", r.Windows)
	fmt.Fprintf(tw, "flagged windows\t%d\t%d\t%d\n", r.FlaggedWindows, in.FlaggedWindows, c.FlaggedWindows)
	fmt.Fprintf(tw, "flagged users\t\t%d\t%d\n", in.FlaggedUsers, c.FlaggedUsers)
	fmt.Fprintf(tw, "bans\t%d\t%d\t%d\n", r.Bans, in.Bans, c.Bans)
	fmt.Fprintf(tw, "banned users\t\t%d\t%d\n", in.BannedUsers, c.BannedUsers)
	fmt.Fprintf(tw, "refused attempts\t%d\t%d\t%d\n", r.Refused, in.Refused, c.Refused)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range leasegate.BacktestChanges {
		l := bt.List(c)
		fmt.Fprintf(p.w, "\n%s: %d\n", c, l.Count)
		if len(l.Users) == 0 {
			continue
		}
		tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "USER\tATTEMPTS\tFLAGGED WINDOWS\tBANS\tBANNED SECONDS\tFIRST ATTEMPT\tLAST ATTEMPT")
		for _, u := range l.Users {
			first, last := "", ""
			if n := len(u.AttemptsAt); n > 0 {
				first, last = stamp(u.AttemptsAt[0].Time), stamp(u.AttemptsAt[n-1].Time)
			}
			fmt.Fprintf(tw, "%s\t%d\t%d -> %d\t%d -> %d\t%d -> %d\t%s\t%s\n", printable(u.UserID), u.Attempts,
				u.InForce.FlaggedWindows, u.Candidate.FlaggedWindows, u.InForce.Bans, u.Candidate.Bans,
				u.InForce.BanSeconds, u.Candidate.BanSeconds, first, last)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if l.NextCursor != "" {
			fmt.Fprintf(p.w, "more: --cursor %s\n", l.NextCursor)
		}
	}
	return nil
}

func policyText(o leasegate.BacktestOutcome) string {
	s := fmt.Sprintf("max %d", o.MaxAttempts)
	if o.BanAfterFlags > 0 {
		s += fmt.Sprintf(", ban after %d for %ds x%g", o.BanAfterFlags, o.BanSeconds, o.Factor)
	}
	if o.RollingWindowSeconds > 0 {
		s += fmt.Sprintf(", rolling %ds", o.RollingWindowSeconds)
	}
	if o.Shadow {
		s += ", shadow"
	}
	return s
}
