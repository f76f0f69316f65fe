package webhook_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/webhook"
)

// An operator sees only the dead letters of their own tenant, newest
// first, at most limit.
func TestInspectorShowsOnlyTheTenantsDeadLetters(t *testing.T) {
	t.Parallel()
	b := redistest.OnMini(t)
	ctx := context.Background()
	ks := keyspace.Space{Prefix: "lgtest:"}
	in := webhook.NewInspector(b.RDB, "lgtest:", true)

	st, err := in.Status(ctx, "shop", 0)
	if err != nil || !st.Enabled || st.OutboxEntries != 0 || len(st.DeadLetters) != 0 {
		t.Fatalf("empty: got %+v %v", st, err)
	}
	for i, tenant := range []string{"shop", "other", "shop", "shop"} {
		err := b.RDB.XAdd(ctx, &redis.XAddArgs{Stream: ks.DeadLetters(), Values: []any{
			"id", string(rune('a' + i)), "type", "ban", "tenant", tenant, "url", "http://r/h", "tries", 3,
			"error", "webhook: http://r/h answered 500", "event", `{"id":"x"}`}}).Err()
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err = in.Status(ctx, "shop", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.DeadLetters) != 2 || st.DeadLetters[0].EventID != "d" || st.DeadLetters[1].EventID != "c" {
		t.Errorf("got %+v, want shop's newest two (d, c)", st.DeadLetters)
	}
	st, err = in.Status(ctx, "other", 0)
	if err != nil || len(st.DeadLetters) != 1 || st.DeadLetters[0].EventID != "b" || st.DeadLetters[0].Tries != 3 {
		t.Errorf("other: got %+v %v", st.DeadLetters, err)
	}
}
