// Package audit keeps the trail of operator actions (docs/operations.md):
// Log is leasegate.AuditLog on a Redis stream per tenant, capped in
// length and trimmed by age, and the wrappers in wrap.go record every
// operator action of the services they wrap (forced releases, bans,
// unbans, clears, forced claim removals).
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
)

// Defaults of Options.
const (
	DefaultMaxLen = 100_000
)

// Options configure a Log.
type Options struct {
	// Prefix starts every key (keyspace.DefaultPrefix when empty).
	Prefix string
	// Retention is how long a record is kept (default
	// leasegate.DefaultAuditRetention, 90 days).
	Retention time.Duration
	// MaxLen caps each tenant's stream (approximately, MAXLEN ~; default
	// DefaultMaxLen).
	MaxLen int64
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Log is the audit trail on Redis: one stream per tenant
// (keyspace.Space.Audit), written with XADD ... MAXLEN ~ and trimmed by
// MINID ~ to the retention on every write; the key expires a retention
// after the last record.
type Log struct {
	rdb  redis.Cmdable
	keys keyspace.Space
	opts Options
}

var _ leasegate.AuditLog = (*Log)(nil)

// New returns a Log on rdb.
func New(rdb redis.Cmdable, opts Options) *Log {
	if opts.Retention <= 0 {
		opts.Retention = leasegate.DefaultAuditRetention
	}
	if opts.MaxLen <= 0 {
		opts.MaxLen = DefaultMaxLen
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Log{rdb: rdb, keys: keyspace.Space{Prefix: opts.Prefix}, opts: opts}
}

func unavailable(err error) error {
	return fmt.Errorf("%w: audit: %w", leasegate.ErrUnavailable, err)
}

// Record implements leasegate.AuditLog. Three commands in one pipeline on
// the stream's slot.
func (l *Log) Record(ctx context.Context, tenant string, r leasegate.AuditRecord) error {
	if r.At.IsZero() {
		r.At = l.opts.Now()
	}
	key := l.keys.Audit(tenant)
	cutoff := r.At.Add(-l.opts.Retention).UnixMilli()
	details, err := json.Marshal(r.Details)
	if err != nil {
		return fmt.Errorf("audit: details: %w", err)
	}
	_, err = l.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{
			Stream: key, MaxLen: l.opts.MaxLen, Approx: true,
			Values: []interface{}{
				"at", strconv.FormatInt(r.At.UnixMilli(), 10),
				"actor", r.Actor, "action", r.Action, "target", r.Target,
				"reason", r.Reason, "details", details, "request_id", r.RequestID,
			},
		})
		p.XTrimMinIDApprox(ctx, key, strconv.FormatInt(cutoff, 10), 0)
		p.PExpire(ctx, key, l.opts.Retention)
		return nil
	})
	if err != nil {
		return unavailable(err)
	}
	return nil
}

// List implements leasegate.AuditLog: newest first, after cursor (a
// record ID; "" = the newest), at most limit (1..1000, default 100).
// Records past the retention are left out even if not trimmed yet.
func (l *Log) List(ctx context.Context, tenant, cursor string, limit int) (leasegate.AuditPage, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, 1000)
	hi := "+"
	if cursor != "" {
		prev, ok := before(cursor)
		if !ok {
			return leasegate.AuditPage{}, leasegate.Invalid(leasegate.FieldError{Field: "cursor", Message: "is not a cursor of this listing"})
		}
		if prev == "" {
			return leasegate.AuditPage{Items: []leasegate.AuditRecord{}}, nil
		}
		hi = prev
	}
	cutoff := l.opts.Now().Add(-l.opts.Retention)
	lo := strconv.FormatInt(cutoff.UnixMilli(), 10)
	msgs, err := l.rdb.XRevRangeN(ctx, l.keys.Audit(tenant), hi, lo, int64(limit)).Result()
	if err != nil {
		return leasegate.AuditPage{}, unavailable(err)
	}
	page := leasegate.AuditPage{Items: make([]leasegate.AuditRecord, 0, len(msgs))}
	for _, m := range msgs {
		if r := decode(m); !r.At.Before(cutoff) {
			page.Items = append(page.Items, r)
		}
	}
	if len(msgs) == limit {
		page.NextCursor = msgs[len(msgs)-1].ID
	}
	return page, nil
}

func decode(m redis.XMessage) leasegate.AuditRecord {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	r := leasegate.AuditRecord{ID: m.ID, Actor: s("actor"), Action: s("action"), Target: s("target"),
		Reason: s("reason"), RequestID: s("request_id")}
	if ms, err := strconv.ParseInt(s("at"), 10, 64); err == nil {
		r.At = time.UnixMilli(ms).UTC()
	}
	// A record written before details existed has none: nil, listed as {}.
	if d := s("details"); d != "" {
		_ = json.Unmarshal([]byte(d), &r.Details) // only Record writes it
	}
	return r
}

// before is the largest stream ID below id ("" when there is none), for
// an exclusive XREVRANGE end that works on every Redis version.
func before(id string) (string, bool) {
	msS, seqS, ok := strings.Cut(id, "-")
	if !ok {
		return "", false
	}
	ms, err1 := strconv.ParseUint(msS, 10, 64)
	seq, err2 := strconv.ParseUint(seqS, 10, 64)
	if err1 != nil || err2 != nil {
		return "", false
	}
	switch {
	case seq > 0:
		return msS + "-" + strconv.FormatUint(seq-1, 10), true
	case ms > 0:
		return strconv.FormatUint(ms-1, 10) + "-18446744073709551615", true
	}
	return "", true
}
