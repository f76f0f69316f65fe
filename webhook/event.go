package webhook

import (
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Event is the JSON body of a delivery. Fields that do not apply to the
// type are left out.
type Event struct {
	// ID is unique per event: a receiver de-duplicates by it.
	ID string `json:"id"`
	// Type is flag, ban, unban, clear or force-release.
	Type string `json:"type"`
	// At is when it happened (Redis's clock).
	At     string `json:"at"`
	Tenant string `json:"tenant"`
	UserID string `json:"user_id,omitempty"`
	// Lock is the user lock (flag, policy ban).
	Lock string `json:"lock,omitempty"`
	// Locks are the locks whose flags a clear removed.
	Locks []string `json:"locks,omitempty"`
	// Resource is the lock of a force-release.
	Resource     string `json:"resource,omitempty"`
	Attempts     int64  `json:"attempts,omitempty"`
	TimesFlagged int64  `json:"times_flagged,omitempty"`
	BannedUntil  string `json:"banned_until,omitempty"`
	// BanNumber is the n of an automatic ban (its escalation step).
	BanNumber int64 `json:"ban_number,omitempty"`
	// Source of a ban: policy or operator.
	Source string `json:"source,omitempty"`
	// Actor is the operator (or "policy") behind the change.
	Actor  string `json:"actor,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// EventOf reads an outbox entry. Times are stored as Unix milliseconds;
// an entry without "at" is dated by its stream id (Redis's clock when it
// was added).
func EventOf(msg redis.XMessage) Event {
	str := func(k string) string { s, _ := msg.Values[k].(string); return s }
	num := func(k string) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
	stamp := func(k string) string {
		if n := num(k); n > 0 {
			return time.UnixMilli(n).UTC().Format("2006-01-02T15:04:05.000Z")
		}
		return ""
	}
	ev := Event{
		ID: str("id"), Type: str("type"), At: stamp("at"), Tenant: str("tenant"),
		UserID: str("user_id"), Lock: str("lock"), Resource: str("resource"),
		Attempts: num("attempts"), TimesFlagged: num("times_flagged"),
		BannedUntil: stamp("banned_until"), BanNumber: num("ban_number"),
		Source: str("source"), Actor: str("actor"), Reason: str("reason"),
	}
	if l := str("locks"); l != "" {
		ev.Locks = strings.Split(l, ",")
	}
	if ev.At == "" {
		ms, _, _ := strings.Cut(msg.ID, "-")
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
			ev.At = time.UnixMilli(n).UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	if ev.ID == "" {
		// Not written by leasegate's outbox (by hand?): the stream id is
		// unique too.
		ev.ID = "outbox-" + msg.ID
	}
	return ev
}
