package abuse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// The webhook outbox (docs/abuse.md, "Webhooks"): every flag, ban, unban
// and clear becomes an entry of one Redis stream (keyspace.Outbox), with a
// unique id, written in the same script or MULTI as the change it
// reports, so that an event exists if and only if the change happened
// and nothing is lost between the two. Package webhook delivers them.
//
// On Redis Cluster the outbox has a slot of its own, which a script on a
// user's keys cannot write: there the event is added right after the
// script, from Go (outboxAfter). A gateway that dies between the two
// loses that event; docs/abuse.md says so.

// Event types of the outbox. Force-release (the lock engine's operator
// release) is reserved for the lock engine's script to write the same way.
const (
	EventFlag         = "flag"
	EventBan          = "ban"
	EventUnban        = "unban"
	EventClear        = "clear"
	EventForceRelease = "force-release"
)

// DefaultOutboxMaxLen bounds the outbox stream (XADD MAXLEN ~): at 10
// events a second, a bit under three hours of events.
const DefaultOutboxMaxLen = 100_000

// newEventID is a random 128-bit id, hex: receivers de-duplicate by it.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}

// outboxInline reports whether events go into the outbox inside the
// script or MULTI (everywhere but Redis Cluster).
func (s *Service) outboxInline() bool { return s.opts.Outbox && !s.cluster }

// outboxKeys are the keys to append to a script's KEYS for the outbox.
func (s *Service) outboxKeys() []string {
	if s.outboxInline() {
		return []string{s.keys.Outbox()}
	}
	return nil
}

func (s *Service) maxLen() int64 {
	if s.opts.OutboxMaxLen > 0 {
		return s.opts.OutboxMaxLen
	}
	return DefaultOutboxMaxLen
}

// outboxAfter adds an event in a second step: on Redis Cluster only
// (elsewhere the script or MULTI wrote it). Failures are logged and
// counted; the change itself has happened.
func (s *Service) outboxAfter(ctx context.Context, fields ...any) {
	if !s.opts.Outbox || !s.cluster {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := s.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: s.keys.Outbox(), MaxLen: s.maxLen(), Approx: true, Values: fields,
	}).Err()
	if err != nil {
		s.m.RedisErrors.WithLabelValues("webhook_outbox").Inc()
		s.log.Error("could not write a webhook event (Redis Cluster: second step)", zap.Error(err))
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
