package leasegate

import (
	"context"
	"encoding/json"
	"time"
)

// PolicyBacktester replays a candidate abuse policy over the attempt log
// of one user lock (docs/abuse.md, "Backtesting a policy"). It changes
// nothing.
type PolicyBacktester interface {
	Backtest(ctx context.Context, tenant string, q BacktestQuery) (Backtest, error)
}

// Page sizes of a backtest's lists.
const (
	DefaultBacktestPageSize = 100
	MaxBacktestPageSize     = 1000
)

// BacktestQuery is the body of POST /abuse/backtest. The JSON names are
// the wire's: the domain type is the contract, for the handler and the Go
// client alike.
type BacktestQuery struct {
	Lock string `json:"lock"`
	// Policy is the candidate: a policy-file lock entry (max_attempts,
	// ban_after_flags, ban_seconds, factor, max_ban_seconds, shadow,
	// rolling_window_seconds);
	// the fields it leaves out are the lock's policy in force.
	Policy json.RawMessage `json:"policy,omitempty"`
	// Since and Until bound the attempts looked at (zero: the whole log).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// Users keeps only these users (none: every user).
	Users []string `json:"users,omitempty"`
	// Limit is the page size of each list (0: DefaultBacktestPageSize);
	// Cursor a NextCursor of a previous answer: every list goes on after
	// it (lists are in user id order).
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// Backtest is what a backtest found.
type Backtest struct {
	Lock  string `json:"lock"`
	Since Stamp  `json:"since"`
	Until Stamp  `json:"until"`
	// Recorded is what the log holds in the range.
	Recorded BacktestRecorded `json:"recorded"`
	// InForce is the replay of the policy in force, Candidate the
	// candidate's, by the same rules.
	InForce   BacktestOutcome `json:"in_force"`
	Candidate BacktestOutcome `json:"candidate"`
	// The users that differ.
	NewlyFlagged     BacktestList `json:"newly_flagged"`
	NoLongerFlagged  BacktestList `json:"no_longer_flagged"`
	NewlyBanned      BacktestList `json:"newly_banned"`
	NoLongerBanned   BacktestList `json:"no_longer_banned"`
	BanLengthChanged BacktestList `json:"ban_length_changed"`
}

// BacktestChange names one of a Backtest's lists of differing users;
// the API, the CLI and the ops page show them in BacktestChanges' order.
type BacktestChange int

const (
	NewlyFlagged BacktestChange = iota
	NoLongerFlagged
	NewlyBanned
	NoLongerBanned
	BanLengthChanged
)

var BacktestChanges = [...]BacktestChange{NewlyFlagged, NoLongerFlagged, NewlyBanned, NoLongerBanned, BanLengthChanged}

// String is the list's title.
func (c BacktestChange) String() string {
	return [...]string{"newly flagged", "no longer flagged", "newly banned", "no longer banned", "ban length changed"}[c]
}

// List is b's list c.
func (b *Backtest) List(c BacktestChange) *BacktestList {
	return [...]*BacktestList{&b.NewlyFlagged, &b.NoLongerFlagged, &b.NewlyBanned, &b.NoLongerBanned, &b.BanLengthChanged}[c]
}

// BacktestRecorded counts the logged attempts in a backtest's range, and
// the flags and bans the gateway recorded with them.
type BacktestRecorded struct {
	Attempts       int64 `json:"attempts"`
	Users          int64 `json:"users"`
	Windows        int64 `json:"windows"`
	FlaggedWindows int64 `json:"flagged_windows"`
	Bans           int64 `json:"bans"`
	Refused        int64 `json:"refused"`
}

// BacktestOutcome is what one policy did, or would have done, in the range.
type BacktestOutcome struct {
	MaxAttempts   int     `json:"max_attempts"`
	BanAfterFlags int     `json:"ban_after_flags"`
	BanSeconds    int64   `json:"ban_seconds"`
	Factor        float64 `json:"factor"`
	MaxBanSeconds int64   `json:"max_ban_seconds"`
	Shadow        bool    `json:"shadow"`
	// RollingWindowSeconds is the rolling span (0: fixed windows).
	RollingWindowSeconds int64 `json:"rolling_window_seconds"`
	FlaggedWindows       int64 `json:"flagged_windows"`
	FlaggedUsers         int64 `json:"flagged_users"`
	Bans                 int64 `json:"bans"`
	BannedUsers          int64 `json:"banned_users"`
	// Refused counts the attempts refused because of a ban.
	Refused int64 `json:"refused"`
}

// BacktestList is one list of differing users, in user id order.
type BacktestList struct {
	Count int            `json:"count"`
	Users []BacktestUser `json:"users"`
	// NextCursor continues the list ("" on its last page).
	NextCursor string `json:"next_cursor"`
}

// BacktestUser is one user that differs, with what to check it by.
type BacktestUser struct {
	UserID   string `json:"user_id"`
	Attempts int64  `json:"attempts"`
	// AttemptsAt are the user's attempt times in the range (the last
	// MaxBacktestAttempts, oldest first).
	AttemptsAt []Stamp `json:"attempts_at"`
	// FlaggedWindows, Bans and BanSeconds (the sum of the bans' lengths)
	// under the policy in force and under the candidate.
	InForce   BacktestUserOutcome `json:"in_force"`
	Candidate BacktestUserOutcome `json:"candidate"`
}

// BacktestUserOutcome is what one policy did to one user.
type BacktestUserOutcome struct {
	FlaggedWindows int64 `json:"flagged_windows"`
	Bans           int64 `json:"bans"`
	BanSeconds     int64 `json:"ban_seconds"`
}

// MaxBacktestAttempts is how many attempt times a backtest shows per user.
const MaxBacktestAttempts = 100

// Stamp is a time that leaves the gateway in TimeFormat (milliseconds,
// UTC) and reads any RFC 3339 time.
type Stamp struct{ time.Time }

// MarshalJSON writes s in TimeFormat.
func (s Stamp) MarshalJSON() ([]byte, error) { return []byte(`"` + FormatTime(s.Time) + `"`), nil }
