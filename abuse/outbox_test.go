package abuse

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// Every flag, ban, unban and clear is an outbox entry written in the same
// script or MULTI as the change; refused or empty actions write none.
func TestOutboxGetsOneEventPerChange(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc := newOutboxService(b.RDB, Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Minute, Factor: 2})
		op := leasegate.RequestMeta{Operator: "alice"}

		flagUser(t, svc, "shop", "login", "bob", 2)
		if err := svc.Unban(ctx, "shop", "bob", op); err != nil {
			t.Fatal(err)
		}
		if err := svc.Unban(ctx, "shop", "bob", op); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Fatalf("second unban: got %v", err)
		}
		if _, err := svc.BanUser(ctx, "shop", "carol", time.Hour, "spam", op); err != nil {
			t.Fatal(err)
		}
		if err := svc.ClearFlags(ctx, "shop", "bob", op); err != nil {
			t.Fatal(err)
		}
		if err := svc.ClearFlags(ctx, "shop", "nobody", op); !errors.Is(err, leasegate.ErrUserNotFound) {
			t.Fatalf("clear of nobody: got %v", err)
		}

		xs, err := b.RDB.XRange(ctx, svc.keys.Outbox(), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		want := []map[string]string{
			{"type": "flag", "tenant": "shop", "user_id": "bob", "lock": "login", "attempts": "2", "times_flagged": "1"},
			{"type": "ban", "user_id": "bob", "lock": "login", "source": "policy", "ban_number": "1", "actor": "policy"},
			{"type": "unban", "user_id": "bob", "actor": "alice"},
			{"type": "ban", "user_id": "carol", "source": "operator", "actor": "alice", "reason": "spam"},
			{"type": "clear", "user_id": "bob", "locks": "login", "actor": "alice"},
		}
		if len(xs) != len(want) {
			t.Fatalf("got %d events %v, want %d", len(xs), xs, len(want))
		}
		ids := map[string]bool{}
		for i, x := range xs {
			for k, v := range want[i] {
				if x.Values[k] != v {
					t.Errorf("event %d: got %s=%v, want %q (%v)", i, k, x.Values[k], v, x.Values)
				}
			}
			id, _ := x.Values["id"].(string)
			if len(id) != 32 || ids[id] {
				t.Errorf("event %d: got id %q, want a new 32-hex id", i, id)
			}
			ids[id] = true
		}
	})
}

// On Redis Cluster the outbox has its own slot: the scripts run without
// it (no CROSSSLOT error) and the events are added in a second step.
func TestOutboxOnRedisCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rdb := cl.Client(t)
	ctx := context.Background()
	svc := newOutboxService(rdb, Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Minute})
	op := leasegate.RequestMeta{Operator: "alice"}
	flagUser(t, svc, "shop", "login", "bob", 2)
	if err := svc.Unban(ctx, "shop", "bob", op); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.BanUser(ctx, "shop", "bob", time.Hour, "x", op); err != nil {
		t.Fatal(err)
	}
	if err := svc.ClearFlags(ctx, "shop", "bob", op); err != nil {
		t.Fatal(err)
	}
	xs, err := rdb.XRange(ctx, svc.keys.Outbox(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, x := range xs {
		types = append(types, x.Values["type"].(string))
	}
	if got, want := strings.Join(types, ","), "flag,ban,unban,ban,clear"; got != want {
		t.Errorf("got events %s, want %s", got, want)
	}
}
