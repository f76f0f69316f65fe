package audit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
)

// forcedOperator force-releases one fixed lease.
type forcedOperator struct {
	leasegate.LockOperator
	lk leasegate.Lock
}

func (o forcedOperator) ForceRelease(context.Context, string, string, string, leasegate.RequestMeta) (leasegate.Lock, error) {
	return o.lk, nil
}

// banningRegistry bans anyone until a fixed time.
type banningRegistry struct {
	leasegate.FlagRegistry
	until time.Time
}

func (r banningRegistry) BanUser(_ context.Context, _, _ string, _ time.Duration, reason string, _ leasegate.RequestMeta) (leasegate.Ban, error) {
	return leasegate.Ban{Until: r.until, Reason: reason}, nil
}

// TestTheReasonIsTheOperatorsTextAndTheFactsAreDetails: contract v1.2,
// "Audit records".
func TestTheReasonIsTheOperatorsTextAndTheFactsAreDetails(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		l := audit.New(b.RDB, audit.Options{Prefix: "audit-wrap-test:"})
		rec := audit.Recorder{Log: l}
		until := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
		op, flags, _ := rec.Wrap(forcedOperator{lk: leasegate.Lock{Resource: "job", Owner: "w1", Token: 1796172335240559}},
			banningRegistry{until: until}, nil)
		meta := leasegate.RequestMeta{Operator: "oncall", RequestID: "req-1"}
		if _, err := op.ForceRelease(ctx, "acme", "job", `stuck job (owner "x")`, meta); err != nil {
			t.Fatal(err)
		}
		if _, err := flags.BanUser(ctx, "acme", "u7", 10*time.Minute, "", meta); err != nil {
			t.Fatal(err)
		}
		p, err := l.List(ctx, "acme", "", 10)
		if err != nil || len(p.Items) != 2 {
			t.Fatalf("got %+v, %v; want a ban and a forced release", p, err)
		}
		ban, fr := p.Items[0], p.Items[1]
		if fr.Reason != `stuck job (owner "x")` {
			t.Errorf("forced release: got reason %q, want the operator's text", fr.Reason)
		}
		if got, want := fr.Details.String(), "owner=w1 token=1796172335240559"; got != want {
			t.Errorf("forced release: got details %s, want %s", got, want)
		}
		if tok, ok := fr.Details["token"].(int64); !ok || tok != 1796172335240559 {
			t.Errorf("forced release: got token %#v, want the int64 1796172335240559", fr.Details["token"])
		}
		if ban.Reason != "" {
			t.Errorf("ban: got reason %q, want the operator's empty text", ban.Reason)
		}
		if got, want := ban.Details.String(), "seconds=600 until=2026-12-04T06:00:00.000Z"; got != want {
			t.Errorf("ban: got details %s, want %s", got, want)
		}
	})
}

func TestRecordsWithoutDetailsReadAsNoDetails(t *testing.T) {
	t.Parallel()
	b := redistest.OnMini(t)
	ctx := context.Background()
	l := audit.New(b.RDB, audit.Options{})
	// A record as written before details existed.
	err := b.RDB.XAdd(ctx, &redis.XAddArgs{Stream: keyspace.Space{}.Audit("acme"), Values: []any{
		"at", strconv.FormatInt(time.Now().UnixMilli(), 10), "actor", "oncall", "action", "force-release",
		"target", "lock:job", "reason", `stuck (owner "w1", token 7)`, "request_id", "req-1",
	}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.List(ctx, "acme", "", 10)
	if err != nil || len(p.Items) != 1 {
		t.Fatalf("got %+v, %v; want the old record", p, err)
	}
	if r := p.Items[0]; r.Reason != `stuck (owner "w1", token 7)` || len(r.Details) != 0 {
		t.Errorf("got %+v, want its reason and no details", r)
	}
}
