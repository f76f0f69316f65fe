package abuse

import "github.com/leasegate/leasegate/internal/outbox"

// The webhook outbox (docs/abuse.md, "Webhooks"): every flag, ban, unban
// and clear becomes an entry of one Redis stream (keyspace.Outbox), with a
// unique id, written in the same script or MULTI as the change it
// reports, so that an event exists if and only if the change happened
// and nothing is lost between the two. Package internal/outbox writes
// (for this package and for redislock's force-release); package webhook
// delivers.
//
// On Redis Cluster the outbox has a slot of its own, which a script on a
// user's keys cannot write: there the event is added right after the
// script, from Go (outbox.Writer.After). A gateway that dies between the
// two loses that event; docs/abuse.md says so.

// Event types abuse writes to the outbox. Force-release is the lock
// engine's (redislock.Operator writes it, in its script).
const (
	EventFlag  = outbox.Flag
	EventBan   = outbox.Ban
	EventUnban = outbox.Unban
	EventClear = outbox.Clear
)

// DefaultOutboxMaxLen bounds the outbox stream (XADD MAXLEN ~): at 10
// events a second, a bit under three hours of events.
const DefaultOutboxMaxLen = outbox.DefaultMaxLen
