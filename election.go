package leasegate

import (
	"context"
	"time"
)

// Leader election (docs/elections.md): a named election has at most one
// leader at a time, with a value anyone may read (e.g. the leader's
// address) and a term that strictly increases per name, the leader's
// fencing token. It is built on the lock engine: the leadership is a
// lease whose owner is the candidate and whose token is the term.

// MaxLeaderValue is the largest value a leader may proclaim, in bytes.
const MaxLeaderValue = 4096

// Leader is an election's current leadership.
type Leader struct {
	Name      string
	Candidate string
	Value     string
	// Term is the leadership's fencing token: it strictly increases for
	// every new leader of the name, and stays while the same leader
	// renews (campaigns again) or proclaims.
	Term      int64
	ElectedAt time.Time
	ExpiresAt time.Time
}

// CampaignRequest asks for the leadership of Name for Candidate.
type CampaignRequest struct {
	Name      string
	Candidate string
	// Value is proclaimed with the leadership (0..MaxLeaderValue bytes).
	Value string
	TTL   time.Duration
	// Wait, when positive, queues the campaign (FIFO, as lock waiters
	// do) for up to that long.
	Wait time.Duration
	// LockDelay: after this leadership ends by expiry, no other candidate
	// is elected before the delay has passed (AcquireRequest.LockDelay,
	// docs/fencing.md). A leader renewing by campaigning again should
	// send the same delay: each grant sets it anew.
	LockDelay time.Duration
}

// CampaignResult says whether the candidate leads.
type CampaignResult struct {
	Elected bool
	// Leadership is the candidate's when Elected.
	Leadership Leader
	// Current, when not Elected, is the sitting leader (nil when there is
	// none, e.g. during a lock delay).
	Current *Leader
	// RetryAfter, when not Elected, is how long until the leadership may
	// be free by the Redis clock.
	RetryAfter time.Duration
	// Renewed: the candidate already led; its term is kept.
	Renewed bool
	// Delayed: not Elected because the last leadership expired and its
	// lock delay still runs (Current is nil then).
	Delayed bool
	// Waited: the campaign waited and the leadership was not free at once.
	Waited bool
}

// ElectionEventKind names a change of an election.
type ElectionEventKind string

// The events of GET /elections/{name}/events.
const (
	ElectionState      ElectionEventKind = "state"
	ElectionElected    ElectionEventKind = "elected"
	ElectionProclaimed ElectionEventKind = "proclaimed"
	ElectionResigned   ElectionEventKind = "resigned"
	ElectionExpired    ElectionEventKind = "expired"
)

// ElectionEvent is one change of an election. Leader is nil only for a
// state event of an election without a leader; for resigned and expired
// it is the leadership that ended.
type ElectionEvent struct {
	Kind   ElectionEventKind
	Leader *Leader
	At     time.Time
}

// HeldElection is an election with a leader as a listing shows it, with
// the campaigns that wait (best effort).
type HeldElection struct {
	Leader
	Waiters int
}

// ElectionPage is one page of a listing. NextCursor is "" after the last
// page.
type ElectionPage struct {
	Items      []HeldElection
	NextCursor string
}

// The errors of every ElectionService.
var (
	// ErrNoLeader: the election has no leader.
	ErrNoLeader = &Error{Code: CodeNotFound, Message: "this election has no leader", Op: "election"}
	// ErrNotLeader: the candidate does not lead with that term.
	ErrNotLeader = &Error{Code: CodeNotFound, Message: "this candidate does not lead this election with this term", Op: "election"}
)

// ElectionService runs the elections of a tenant's namespace. Any store
// error wraps ErrUnavailable and never elects anyone.
type ElectionService interface {
	// Campaign elects the candidate when there is no leader (a new term),
	// renews it when it already leads (same term; the value is
	// proclaimed), or reports the sitting leader after waiting up to
	// req.Wait.
	Campaign(ctx context.Context, tenant string, req CampaignRequest) (CampaignResult, error)
	// Proclaim sets the value of candidate's leadership of term.
	// ErrNotLeader unless candidate leads with term.
	Proclaim(ctx context.Context, tenant, name, candidate string, term int64, value string) (Leader, error)
	// Resign ends candidate's leadership of term at once (no lock delay).
	// ErrNotLeader unless candidate leads with term.
	Resign(ctx context.Context, tenant, name, candidate string, term int64) error
	// Leader returns the leadership, or ErrNoLeader.
	Leader(ctx context.Context, tenant, name string) (Leader, error)
	// Observe sends the election's changes on events, starting with an
	// ElectionState, until ctx ends (its error is then nil) or the store
	// fails. It never closes events.
	Observe(ctx context.Context, tenant, name string, events chan<- ElectionEvent) error
	// List returns the elections with a leader whose name starts with
	// prefix, in name order, after cursor, at most limit.
	List(ctx context.Context, tenant, prefix, cursor string, limit int) (ElectionPage, error)
}
