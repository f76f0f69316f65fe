package abuse

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
)

// The service stores under package keyspace's keys (pinned there, byte
// for byte) with its prefix, and under no others.
func TestServiceStoresOnlyUnderTheKeyspaceKeys(t *testing.T) {
	t.Parallel()
	b := miniBackend(t)
	ctx := context.Background()
	svc, _ := newService(t, b, policies(2))
	const tenant, lock, user = "acme", "login", "u:1}"
	flagUser(t, svc, tenant, lock, user, 2)
	if _, err := svc.BanUser(ctx, tenant, user, time.Hour, "spam", leasegate.RequestMeta{}); err != nil {
		t.Fatal(err)
	}

	space := keyspace.Space{Prefix: "lgtest:"}
	u := space.User(tenant, user)
	want := []string{u.Counter(lock), u.Flag(lock), u.Flags(), u.Ban(), space.FlagIndex(tenant, ""), space.FlagIndex(tenant, lock), space.AttemptLog(tenant, lock)}
	got, err := b.RDB.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got keys %q, want %q", got, want)
	}
}
