package leasegate

import (
	"context"
	"strconv"
	"time"
)

// Claims: work that must happen once (docs/claims.md). A claim on (scope,
// key) is a lease that can be completed with a result; once done, the
// claim answers with that result instead of letting the work run again.

// Limits of claims.
const (
	// MaxClaimResult is the largest result, in bytes of JSON.
	MaxClaimResult = 8 << 10
	// DefaultClaimKeep is how long a done claim is kept by default.
	DefaultClaimKeep = 7 * 24 * time.Hour
	// MaxClaimKeep is the longest keep_seconds (365 days).
	MaxClaimKeep = 31_536_000 * time.Second
)

// ClaimState is the state of a claim.
type ClaimState int

// Claim states.
const (
	// ClaimPending: a live lease; its holder is doing the work.
	ClaimPending ClaimState = iota + 1
	// ClaimDone: the work happened; the result is stored.
	ClaimDone
)

func (s ClaimState) String() string {
	switch s {
	case ClaimPending:
		return "pending"
	case ClaimDone:
		return "done"
	}
	return "ClaimState(" + strconv.Itoa(int(s)) + ")"
}

// Claim is a pending claim: who is doing the work, under which token,
// until when.
type Claim struct {
	Scope string
	Key   string
	Owner string
	// Token strictly increases for every new holder of (scope, key).
	Token     int64
	ClaimedAt time.Time
	ExpiresAt time.Time
}

// ClaimResult is the state of a claim as an operation left it.
type ClaimResult struct {
	State ClaimState
	// Claim is the pending claim (State == ClaimPending).
	Claim Claim
	// Created: this call started the pending claim (the caller must do
	// the work now); false for the same owner's repeat.
	Created bool
	// Reclaimed: Created over a pending claim whose lease had expired
	// (its worker died).
	Reclaimed bool
	// Result is the stored result, byte for byte as completed, and
	// CompletedAt when (State == ClaimDone). Token is the token that
	// completed it.
	Result      []byte
	CompletedAt time.Time
	Token       int64
	// Replayed: a Complete that found the same completion already done.
	Replayed bool
}

// ClaimRequest asks for the claim on (Scope, Key) for Owner.
type ClaimRequest struct {
	Scope string
	Key   string
	Owner string
	TTL   time.Duration
}

// CompleteRequest completes the pending claim held by Owner under Token.
type CompleteRequest struct {
	Scope  string
	Key    string
	Owner  string
	Token  int64
	Result []byte // one JSON value, at most MaxClaimResult bytes
	// Keep is how long the done claim is kept (0: DefaultClaimKeep).
	Keep time.Duration
}

// The errors of every ClaimService.
var (
	// ErrClaimNotFound: nothing pending (or nothing at all) on the claim.
	ErrClaimNotFound = &Error{Code: CodeNotFound, Message: "no pending claim on this key", Op: "claim"}
	// ErrClaimForbidden: the claim is another owner's, under another
	// token, or already done by another completion.
	ErrClaimForbidden = &Error{Code: CodeForbidden, Message: "the claim is held by another owner or under another token", Op: "claim"}
	// ErrClaimInProgress: another owner's pending claim is live. Returned
	// through Detailed with RetryAfter = its lease's remaining time.
	ErrClaimInProgress = &Error{Code: CodeClaimInProgress, Message: "another owner is doing this work", Op: "claim"}
)

// ClaimService runs claims in a tenant's namespace. Any store error wraps
// ErrUnavailable and changes nothing.
type ClaimService interface {
	// Claim starts (or, for the same owner, extends) the pending claim,
	// or answers the done state. Another owner's live pending claim is
	// ErrClaimInProgress.
	Claim(ctx context.Context, tenant string, req ClaimRequest) (ClaimResult, error)
	// Complete stores the result of the pending claim held by owner
	// under token. Completing again with the same token and result
	// answers the done state (Replayed). ErrClaimNotFound when nothing is
	// pending, ErrClaimForbidden for another owner, token or completion.
	Complete(ctx context.Context, tenant string, req CompleteRequest) (ClaimResult, error)
	// Abandon ends owner's pending claim so another caller may claim it
	// at once. ErrClaimNotFound / ErrClaimForbidden as for Complete; a
	// done claim is ErrClaimForbidden.
	Abandon(ctx context.Context, tenant, scope, key, owner string, token int64) error
	// Get returns the pending or done state, or ErrClaimNotFound.
	Get(ctx context.Context, tenant, scope, key string) (ClaimResult, error)
	// Remove deletes the claim whatever its state (an operator action,
	// recorded with meta.Operator and reason); ErrClaimNotFound when
	// nothing is there. It returns the state removed.
	Remove(ctx context.Context, tenant, scope, key, reason string, meta RequestMeta) (ClaimState, error)
}
