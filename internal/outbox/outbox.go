// Package outbox writes webhook events into the outbox stream
// (keyspace.Space.Outbox) for package webhook to deliver (docs/abuse.md,
// "Webhooks"). It is shared by the services whose changes become events:
// abuse (flag, ban, unban, clear) and redislock's Operator
// (force-release), which may not import each other.
//
// An event is written in the same script or MULTI as the change it
// reports, so that it exists if and only if the change happened: the
// caller appends Keys() to its script's KEYS and the script XADDs with
// MaxLen(). On Redis Cluster the outbox has a slot of its own, which a
// script on a user's or a resource's keys cannot write: there Keys() is
// empty and After writes the event right after the script, from Go. A
// gateway that dies between the two loses that event; docs/abuse.md says
// so.
package outbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/keyspace"
)

// Event types: the "type" field of an outbox entry and of a delivery.
// The scripts spell them too (scripts/*.lua); the tests of each writer
// compare what the scripts wrote with these.
const (
	Flag         = "flag"
	Ban          = "ban"
	Unban        = "unban"
	Clear        = "clear"
	ForceRelease = "force-release"
)

// DefaultMaxLen bounds the outbox stream (XADD MAXLEN ~): at 10 events a
// second, a bit under three hours of events.
const DefaultMaxLen = 100_000

// Options configure a Writer; the zero value writes nothing.
type Options struct {
	// On: webhooks are configured, events are written.
	On bool
	// MaxLen bounds the stream (DefaultMaxLen when 0).
	MaxLen int64
	// Log and Failed report a failed second step (nil: not reported);
	// Failed counts it (metrics.Metrics.WebhookOutboxFailed).
	Log    *zap.Logger
	Failed func()
}

// Writer writes the events of one service. A nil *Writer writes nothing.
type Writer struct {
	rdb     redis.Cmdable
	key     string
	on      bool
	cluster bool
	maxLen  int64
	log     *zap.Logger
	failed  func()
}

// New returns a Writer on rdb, the client the service's scripts run on:
// a *redis.ClusterClient means Redis Cluster (events in a second step).
func New(rdb redis.Cmdable, keys keyspace.Space, opts Options) *Writer {
	_, cluster := rdb.(*redis.ClusterClient)
	w := &Writer{rdb: rdb, key: keys.Outbox(), on: opts.On, cluster: cluster,
		maxLen: opts.MaxLen, log: opts.Log, failed: opts.Failed}
	if w.maxLen <= 0 {
		w.maxLen = DefaultMaxLen
	}
	if w.log == nil {
		w.log = zap.NewNop()
	}
	return w
}

// On reports whether events are written at all.
func (w *Writer) On() bool { return w != nil && w.on }

// Inline reports whether events go into the outbox inside the script or
// MULTI of the change (everywhere but Redis Cluster).
func (w *Writer) Inline() bool { return w.On() && !w.cluster }

// Keys are the keys to append to a script's KEYS: the outbox when the
// script writes the event itself, else none.
func (w *Writer) Keys() []string {
	if w.Inline() {
		return []string{w.key}
	}
	return nil
}

// MaxLen is the stream's bound, for a script's XADD MAXLEN ~.
func (w *Writer) MaxLen() int64 {
	if w == nil {
		return DefaultMaxLen
	}
	return w.maxLen
}

// Args is the XADD of one event with fields (name, value, ...), for a
// MULTI that writes it with its change.
func (w *Writer) Args(fields ...any) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: w.key, MaxLen: w.MaxLen(), Approx: true, Values: fields}
}

// After adds an event in a second step: on Redis Cluster only (elsewhere
// the script or MULTI wrote it). It runs even when ctx has ended (the
// change has happened); a failure is logged and counted, not returned.
func (w *Writer) After(ctx context.Context, fields ...any) {
	if !w.On() || !w.cluster {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := w.rdb.XAdd(ctx, w.Args(fields...)).Err(); err != nil {
		if w.failed != nil {
			w.failed()
		}
		w.log.Error("could not write a webhook event (Redis Cluster: second step)", zap.Error(err))
	}
}

// NewID is a random 128-bit event id, hex: receivers de-duplicate by it.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// Millis is t as the outbox stores times: Unix milliseconds, decimal.
func Millis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
