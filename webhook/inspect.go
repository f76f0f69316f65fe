package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
)

// Inspector is leasegate.WebhookInspector on the outbox of prefix.
type Inspector struct {
	rdb     redis.UniversalClient
	stream  string
	dead    string
	enabled bool
}

var _ leasegate.WebhookInspector = (*Inspector)(nil)

// NewInspector reads the outbox under prefix; enabled says whether this
// gateway delivers webhooks.
func NewInspector(rdb redis.UniversalClient, prefix string, enabled bool) *Inspector {
	ks := keyspace.Space{Prefix: prefix}
	return &Inspector{rdb: rdb, stream: ks.Outbox(), dead: ks.DeadLetters(), enabled: enabled}
}

// deadScan bounds how many dead letters Status reads to find a tenant's.
const deadScan = 2000

// Status implements leasegate.WebhookInspector. Dead letters of other
// tenants are never shown.
func (in *Inspector) Status(ctx context.Context, tenant string, limit int) (leasegate.WebhookStatus, error) {
	if limit <= 0 {
		limit = leasegate.DefaultDeadLetterPageSize
	}
	limit = min(limit, leasegate.MaxDeadLetterPageSize)
	var (
		xlen   *redis.IntCmd
		groups *redis.XInfoGroupsCmd
		dead   *redis.XMessageSliceCmd
	)
	_, err := in.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xlen = p.XLen(ctx, in.stream)
		groups = p.XInfoGroups(ctx, in.stream)
		dead = p.XRevRangeN(ctx, in.dead, "+", "-", deadScan)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) && !strings.Contains(err.Error(), "no such key") {
		return leasegate.WebhookStatus{}, fmt.Errorf("%w: %w", leasegate.ErrUnavailable, err)
	}
	st := leasegate.WebhookStatus{Enabled: in.enabled, OutboxEntries: xlen.Val()}
	for _, g := range groups.Val() {
		st.Pending += g.Pending
	}
	for _, m := range dead.Val() {
		if len(st.DeadLetters) == limit {
			break
		}
		str := func(k string) string { s, _ := m.Values[k].(string); return s }
		if str("tenant") != tenant {
			continue
		}
		tries, _ := strconv.ParseInt(str("tries"), 10, 64)
		dl := leasegate.DeadLetter{EventID: str("id"), Type: str("type"), URL: str("url"),
			Tries: tries, Error: str("error"), Event: []byte(str("event"))}
		if ms, _, ok := strings.Cut(m.ID, "-"); ok {
			if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
				dl.FailedAt = time.UnixMilli(n).UTC()
			}
		}
		st.DeadLetters = append(st.DeadLetters, dl)
	}
	return st, nil
}
