package leasegatetest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/leasegatetest"
	"github.com/leasegate/leasegate/server"
)

func TestFastForwardExpiresALeaseOnEitherStore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		opts func(t *testing.T) []leasegatetest.Option
	}{
		{"on the embedded store", func(*testing.T) []leasegatetest.Option { return nil }},
		{"on redis-server", func(t *testing.T) []leasegatetest.Option {
			return []leasegatetest.Option{leasegatetest.WithRedisURL(redistest.Start(t).URL())}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			gw := leasegatetest.NewServer(t, c.opts(t)...)
			cl := gw.Client()
			ctx := context.Background()
			if _, err := cl.Acquire(ctx, "report", time.Second, client.WithOwner("a")); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Acquire(ctx, "report", time.Second, client.WithOwner("b")); !errors.As(err, new(*client.NotAcquiredError)) {
				t.Fatalf("got %v, want not acquired while a holds it", err)
			}
			gw.FastForward(time.Second)
			if _, err := cl.Acquire(ctx, "report", time.Second, client.WithOwner("b")); err != nil {
				t.Fatalf("got %v after the lease's TTL, want b to acquire", err)
			}
		})
	}
}

// A waiting acquire sleeps until its lock's lease ends by the store's
// clock; FastForward wakes it, so it gets the lock long before its
// wait_ms (and the test's context, the bound of a hang) ends.
func TestFastForwardWakesAWaitingAcquire(t *testing.T) {
	t.Parallel()
	gw := leasegatetest.NewServer(t, leasegatetest.WithConfig(func(c *server.Config) { c.HTTP.MaxWait = time.Minute }))
	cl := gw.Client()
	if _, err := cl.Acquire(context.Background(), "nightly", 10*time.Minute, client.WithOwner("a")); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := cl.Acquire(ctx, "nightly", time.Minute, client.WithOwner("b"), client.WithWait(time.Minute))
		got <- err
	}()
	redistest.Eventually(t, 10*time.Second, "b waits", func() bool {
		l, err := cl.List(context.Background(), client.ListOptions{})
		return err == nil && len(l.Items) == 1 && l.Items[0].Waiters == 1
	})
	gw.FastForward(10 * time.Minute)
	if err := <-got; err != nil {
		t.Fatalf("got %v, want b to acquire once a's lease has expired", err)
	}
}

func TestFastForwardLiftsABan(t *testing.T) {
	t.Parallel()
	p := abuse.DefaultPolicies()
	p.Default = abuse.Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Hour}
	gw := leasegatetest.NewServer(t, leasegatetest.WithAbusePolicies(p))
	cl := gw.Client()
	ctx := context.Background()
	for i := range 2 {
		if _, err := cl.UserLock(ctx, "login", "u1", time.Minute); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
	}
	if _, err := cl.UserLock(ctx, "login", "u1", time.Minute); !errors.Is(err, leasegate.ErrBanned) {
		t.Fatalf("got %v, want banned after the flag", err)
	}
	gw.FastForward(time.Hour)
	if res, err := cl.UserLock(ctx, "login", "u1", time.Minute); err != nil || !res.Acquired {
		t.Fatalf("got %+v, %v an hour later, want a new window", res, err)
	}
}

func TestAPIKeysHaveTheirRoles(t *testing.T) {
	t.Parallel()
	const clientKey, opsKey = "client-key-0123456789", "ops-key-0123456789abc"
	gw := leasegatetest.NewServer(t,
		leasegatetest.WithAPIKey(clientKey, leasegate.RoleClient, "shop"),
		leasegatetest.WithAPIKey(opsKey, leasegate.RoleOps, "shop"))
	ctx := context.Background()
	if _, err := gw.Client().Acquire(ctx, "r", time.Minute); err != nil {
		t.Fatalf("the first key: %v", err)
	}
	if _, err := gw.Client().BanUser(ctx, "u1", time.Hour, "test"); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("got %v, want a client key refused an ops route", err)
	}
	if _, err := gw.Client(client.WithAPIKey(opsKey)).BanUser(ctx, "u1", time.Hour, "test"); err != nil {
		t.Errorf("the ops key: %v", err)
	}
	res, err := http.Get(gw.URL() + "/locks/r")
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("got %d without a key, want 401", res.StatusCode)
	}
}
