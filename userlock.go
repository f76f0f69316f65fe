package leasegate

import (
	"context"
	"fmt"
	"regexp"
	"time"
)

// UserLockName is what a user lock's name (and a claim's scope) may be.
var UserLockName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// UserLockResult is the outcome of one user-lock attempt (the PHP Lock
// class's addUserLock).
type UserLockResult struct {
	// Acquired is true only for the attempt that started the window.
	Acquired bool
	// Attempts is this attempt's number in the window (1 = acquired).
	Attempts int64
	// Flagged: the user has reached max_attempts in this window (never
	// for allowlisted users).
	Flagged bool
	// FlaggedNow: this attempt is the one that flagged the window.
	FlaggedNow bool
	// WindowStart and ExpiresAt bound the window (the lock's TTL from its
	// first attempt).
	WindowStart time.Time
	ExpiresAt   time.Time
	// BannedUntil is set when this attempt made the policy ban the user.
	BannedUntil time.Time
	// BanNumber is the n of the automatic ban this attempt placed (the
	// n-th policy ban of the user on this lock), 0 when none.
	BanNumber int64
	// RateLimit is what the RateLimit header fields tell the client.
	RateLimit RateLimit
}

// RateLimit is one user lock's quota as the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers) carry it: RateLimit-Policy
// "<Policy>";q=<Quota>;w=<Window> and RateLimit "<Policy>";r=<Remaining>;t=<Reset>.
type RateLimit struct {
	// Policy names the quota (the user lock's name).
	Policy string
	// Quota is the lock's max_attempts: the attempt that reaches it flags.
	Quota int64
	// Window is the window's length (the lock's TTL from its first attempt).
	Window time.Duration
	// Remaining is how many more attempts the window takes before the
	// flag (0 at and after the threshold, and while banned).
	Remaining int64
	// Reset is how long until the window ends (while banned: until the
	// ban ends).
	Reset time.Duration
}

// IsZero reports whether r carries nothing (no header is sent then).
func (r RateLimit) IsZero() bool { return r == (RateLimit{}) }

// Flag is one (user, lock) entry of the flagged registry.
type Flag struct {
	UserID         string
	Lock           string
	TimesFlagged   int64
	PeakAttempts   int64
	FirstFlaggedAt time.Time
	LastFlaggedAt  time.Time
	// BannedUntil is the user's active ban, zero when none.
	BannedUntil time.Time
	// AutomaticBans counts the policy bans this lock's policy placed on
	// the user (the n of the escalation), kept as long as the record.
	AutomaticBans int64
	// AttemptsAt are the times of the last attempts (at most
	// MaxEvidence, oldest first) of the window that flagged: the evidence.
	AttemptsAt []time.Time
	// Ban is the user's active ban with who placed it, when and why; nil
	// when none.
	Ban *Ban
}

// MaxEvidence is how many attempt times a flag record keeps.
const MaxEvidence = 50

// Ban is an active ban of a user.
type Ban struct {
	Until   time.Time
	Reason  string
	By      string
	Source  string // "operator" or "policy"
	Lock    string // the lock whose policy placed it ("" for operators)
	Created time.Time
}

// UserFlags is everything the registry holds on one user.
type UserFlags struct {
	UserID string
	Flags  []Flag
	// Ban is the active ban, nil when none.
	Ban *Ban
}

// Page sizes of the flagged registry.
const (
	DefaultFlagPageSize = 50
	MaxFlagPageSize     = 500
)

// MaxBan is the longest ban an operator may place.
const MaxBan = 365 * 24 * time.Hour

// FlagQuery selects a page of the flagged registry.
type FlagQuery struct {
	// Lock, when set, keeps only flags on that lock.
	Lock string
	// Limit is the page size (0: DefaultFlagPageSize).
	Limit int
	// Cursor is a NextCursor from the previous page ("" for the first).
	Cursor string
}

// FlagPage is one page of flags, newest first.
type FlagPage struct {
	Items []Flag
	// NextCursor continues the listing; "" on the last page.
	NextCursor string
}

// BannedError is returned by an attempt of a banned user. errors.Is(err,
// ErrBanned) is true.
type BannedError struct {
	Until     time.Time
	Remaining time.Duration
	// RateLimit is the quota of the lock tried (Remaining 0, Reset the
	// ban's remaining time).
	RateLimit RateLimit
}

func (e *BannedError) Error() string {
	return fmt.Sprintf("abuse: banned until %s (%v left)", e.Until.Format(time.RFC3339), e.Remaining)
}

// Unwrap makes errors.Is(err, ErrBanned) true.
func (e *BannedError) Unwrap() error { return ErrBanned }

// The errors of the user-lock and registry services.
var (
	// ErrBanned: the user is under an active ban (see *BannedError).
	ErrBanned = &Error{Code: CodeAbnormalUsage, Message: "this user is banned for abnormal usage", Op: "abuse"}
	// ErrUserNotFound: no such user lock, flag or ban.
	ErrUserNotFound = &Error{Code: CodeNotFound, Message: "nothing there for this user", Op: "abuse"}
	// ErrAllowlisted: the user is on the allowlist and cannot be banned.
	ErrAllowlisted = &Error{Code: CodeValidation, Message: "user_id: is on the allowlist and cannot be banned",
		Fields: []FieldError{{Field: "user_id", Message: "is on the allowlist and cannot be banned"}}, Op: "abuse"}
	// ErrBadCursor: a paging cursor the registry did not hand out.
	ErrBadCursor = &Error{Code: CodeValidation, Message: "cursor: must be a next_cursor from a previous page",
		Fields: []FieldError{{Field: "cursor", Message: "must be a next_cursor from a previous page"}}, Op: "abuse"}
)

// UserLockService runs user locks with abuse counters in a tenant's
// namespace.
type UserLockService interface {
	// Attempt is one attempt on user lock name by userID: the first in a
	// window acquires it for ttl, later ones count. A banned user gets a
	// *BannedError and nothing is counted.
	Attempt(ctx context.Context, tenant, name, userID string, ttl time.Duration, meta RequestMeta) (UserLockResult, error)
	// Clear ends the window (clearUserLock); ErrUserNotFound when none.
	Clear(ctx context.Context, tenant, name, userID string) error
}

// FlagRegistry is the operators' view of flagged users: review, clear,
// ban and unban. Every action is recorded with meta.Operator.
type FlagRegistry interface {
	List(ctx context.Context, tenant string, q FlagQuery) (FlagPage, error)
	// Get returns a user's flags and ban, or ErrUserNotFound.
	Get(ctx context.Context, tenant, userID string) (UserFlags, error)
	// ClearFlags removes the user's flags and any ban; ErrUserNotFound
	// when nothing is there.
	ClearFlags(ctx context.Context, tenant, userID string, meta RequestMeta) error
	// BanUser bans the user for d (at most MaxBan); ErrAllowlisted for an
	// allowlisted user.
	BanUser(ctx context.Context, tenant, userID string, d time.Duration, reason string, meta RequestMeta) (Ban, error)
	// Unban lifts an active ban; ErrUserNotFound when none.
	Unban(ctx context.Context, tenant, userID string, meta RequestMeta) error
}
