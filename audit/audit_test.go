package audit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/audit"
	"github.com/leasegate/leasegate/internal/redistest"
)

func TestAuditTrailIsNewestFirstPagedAndPerTenant(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
		l := audit.New(b.RDB, audit.Options{Prefix: "audit-test:", Now: func() time.Time { return now }})
		for i := 0; i < 5; i++ {
			if err := l.Record(ctx, "acme", leasegate.AuditRecord{At: now.Add(time.Duration(i) * time.Second),
				Actor: "oncall", Action: leasegate.AuditBan, Target: fmt.Sprint("user:", i), Reason: "r", RequestID: "q"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Record(ctx, "other", leasegate.AuditRecord{Actor: "x", Action: leasegate.AuditUnban, Target: "user:9"}); err != nil {
			t.Fatal(err)
		}
		var got []string
		cursor := ""
		for {
			p, err := l.List(ctx, "acme", cursor, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Items {
				got = append(got, r.Target)
				if r.Actor != "oncall" || r.Action != "ban" || r.Reason != "r" || r.RequestID != "q" || r.At.IsZero() {
					t.Errorf("got record %+v", r)
				}
			}
			if p.NextCursor == "" {
				break
			}
			cursor = p.NextCursor
		}
		if want := "[user:4 user:3 user:2 user:1 user:0]"; fmt.Sprint(got) != want {
			t.Errorf("got %v, want %s", got, want)
		}
		p, err := l.List(ctx, "other", "", 10)
		if err != nil || len(p.Items) != 1 || p.Items[0].Target != "user:9" {
			t.Errorf("tenant other: got %+v, %v", p, err)
		}
		if _, err := l.List(ctx, "acme", "not-a-cursor", 10); !errors.Is(err, &leasegate.Error{Code: leasegate.CodeValidation}) {
			var de *leasegate.Error
			if !errors.As(err, &de) || de.Code != leasegate.CodeValidation {
				t.Errorf("bad cursor: got %v, want a validation error", err)
			}
		}
	})
}

func TestRecordsPastTheRetentionAreNotListed(t *testing.T) {
	t.Parallel()
	b := redistest.OnMini(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	b.SetTime(now) // stream IDs come from the server's clock
	l := audit.New(b.RDB, audit.Options{Retention: time.Hour, Now: func() time.Time { return now }})
	if err := l.Record(ctx, "", leasegate.AuditRecord{At: now.Add(-2 * time.Hour), Action: "ban"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, "", leasegate.AuditRecord{Action: "unban"}); err != nil {
		t.Fatal(err)
	}
	p, err := l.List(ctx, "", "", 10)
	if err != nil || len(p.Items) != 1 || p.Items[0].Action != "unban" {
		t.Errorf("got %+v, %v; want only the record within the retention", p, err)
	}
}

func TestTheOpenModeActorIsOpen(t *testing.T) {
	t.Parallel()
	// The contract spells it "open" in audit records; the abuse log and a
	// ban's banned_by use the same name.
	if got := leasegate.OpenMode.Actor(); got != "open" {
		t.Errorf("got %q, want open", got)
	}
}

func TestWrapRecordsTheServicesThatAreThereAndLeavesNilAlone(t *testing.T) {
	t.Parallel()
	rec := audit.Recorder{}
	t.Run("absent flags and claims stay nil", func(t *testing.T) {
		op, flags, claims := rec.Wrap(nil, nil, nil)
		if _, ok := op.(audit.Locks); !ok {
			t.Errorf("operator: got %T, want audit.Locks", op)
		}
		if flags != nil || claims != nil {
			t.Errorf("got flags %v, claims %v, want both nil", flags, claims)
		}
	})
	t.Run("present flags and claims are wrapped", func(t *testing.T) {
		_, flags, claims := rec.Wrap(nil, audit.Flags{}, audit.Claims{})
		if f, ok := flags.(audit.Flags); !ok || f.FlagRegistry == nil {
			t.Errorf("flags: got %#v, want audit.Flags around the registry", flags)
		}
		if c, ok := claims.(audit.Claims); !ok || c.ClaimService == nil {
			t.Errorf("claims: got %#v, want audit.Claims around the service", claims)
		}
	})
}
