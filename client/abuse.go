package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/leasegate/leasegate"
)

// Flag is a user flagged on one lock (FLAG in the contract).
type Flag struct {
	UserID         string    `json:"user_id"`
	Lock           string    `json:"lock"`
	TimesFlagged   int64     `json:"times_flagged"`
	PeakAttempts   int64     `json:"peak_attempts"`
	FirstFlaggedAt time.Time `json:"first_flagged_at"`
	LastFlaggedAt  time.Time `json:"last_flagged_at"`
	// BannedUntil is the user's active ban, nil when none.
	BannedUntil *time.Time `json:"banned_until"`
	// AutomaticBans counts the policy bans of this lock on the user (the
	// escalation's n), kept for the flag retention.
	AutomaticBans int64 `json:"automatic_bans"`
	// AttemptsAt is the evidence: the last attempts (at most 50, oldest
	// first) of the window that flagged.
	AttemptsAt []time.Time `json:"attempts_at"`
}

// FlagPage is one page of flagged users, newest first.
type FlagPage struct {
	Items []Flag `json:"items"`
	// NextCursor continues the listing; nil on the last page.
	NextCursor *string `json:"next_cursor"`
}

// ListFlaggedOptions select a page.
type ListFlaggedOptions struct {
	Lock   string // only this lock ("" = all)
	Limit  int    // page size (0 = the gateway's default)
	Cursor string // a NextCursor ("" = first page)
}

// Ban is a user's active ban.
type Ban struct {
	UserID      string    `json:"user_id"`
	BannedUntil time.Time `json:"banned_until"`
	Reason      string    `json:"reason"`
	BannedBy    string    `json:"banned_by"`
	Source      string    `json:"source"` // operator or policy
	// BannedAt is when the ban was placed (nil from an older gateway).
	BannedAt *time.Time `json:"banned_at,omitempty"`
	// Lock is the lock whose policy placed a policy ban ("" for operators).
	Lock string `json:"lock,omitempty"`
}

// UserFlags is everything the gateway holds on one user.
type UserFlags struct {
	UserID string `json:"user_id"`
	Flags  []Flag `json:"flags"`
	Ban    *Ban   `json:"ban"`
}

// ListFlagged returns a page of flagged users (ops role).
func (c *Client) ListFlagged(ctx context.Context, opts ListFlaggedOptions) (FlagPage, error) {
	q := pageQuery(opts.Limit, opts.Cursor)
	if opts.Lock != "" {
		q.Set("lock", opts.Lock)
	}
	var out FlagPage
	_, err := c.do(ctx, http.MethodGet, withQuery("/abuse/flagged", q), nil, &out)
	return out, err
}

// GetFlagged returns one user's flags and ban; leasegate.ErrUserNotFound
// (and ErrNotFound) when neither.
func (c *Client) GetFlagged(ctx context.Context, userID string) (UserFlags, error) {
	var out UserFlags
	_, err := c.do(ctx, http.MethodGet, "/abuse/flagged/"+url.PathEscape(userID), nil, &out)
	return out, answerFor(err, leasegate.ErrUserNotFound)
}

// ClearFlagged removes a user's flags and any ban;
// leasegate.ErrUserNotFound (and ErrNotFound) when there was neither.
func (c *Client) ClearFlagged(ctx context.Context, userID string) error {
	_, err := c.do(ctx, http.MethodDelete, "/abuse/flagged/"+url.PathEscape(userID), nil, nil)
	return answerFor(err, leasegate.ErrUserNotFound)
}

// BanUser bans a user from every user lock for d (whole seconds, at least
// one), replacing any ban in place.
func (c *Client) BanUser(ctx context.Context, userID string, d time.Duration, reason string) (Ban, error) {
	body := map[string]any{"seconds": int64(d / time.Second)}
	if reason != "" {
		body["reason"] = reason
	}
	var out Ban
	_, err := c.do(ctx, http.MethodPost, "/abuse/bans/"+url.PathEscape(userID), body, &out)
	return out, err
}

// Unban lifts a user's ban; leasegate.ErrUserNotFound (and ErrNotFound)
// when there is none.
func (c *Client) Unban(ctx context.Context, userID string) error {
	_, err := c.do(ctx, http.MethodDelete, "/abuse/bans/"+url.PathEscape(userID), nil, nil)
	return answerFor(err, leasegate.ErrUserNotFound)
}

// Backtest replays a candidate policy over a lock's attempt log (ops
// role; docs/abuse.md, "Backtesting a policy"). It changes nothing. Bad
// input is a validation *Error naming the field.
func (c *Client) Backtest(ctx context.Context, q leasegate.BacktestQuery) (leasegate.Backtest, error) {
	var out leasegate.Backtest
	_, err := c.do(ctx, http.MethodPost, "/abuse/backtest", q, &out)
	return out, err
}
