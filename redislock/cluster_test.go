package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// clusterNames are resources chosen to look like hash tags, plus enough
// plain names to land on every master.
func clusterNames(prefix string) []string {
	names := []string{"{a}", "a", "{a}b", "x}{y", "}{", "{", "}", "{}", "user:{42}", "ü", "a b", "t=x;r=y"}
	for i := 0; i < 30; i++ {
		names = append(names, fmt.Sprintf("%s-%d", prefix, i))
	}
	return names
}

// masterOf is the address of the master that serves key.
func masterOf(t *testing.T, rc *redis.ClusterClient, key string) string {
	t.Helper()
	node, err := rc.MasterForKey(context.Background(), key)
	if err != nil {
		t.Fatalf("master for %q: %v", key, err)
	}
	return node.Options().Addr
}

func TestLocksOnRealCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)

	t.Run("every operation works for names spread over all masters", func(t *testing.T) {
		l := wrap(redislock.New(rc, redislock.Config{})).Tenant("t{1}")
		masters := map[string]int{}
		for _, res := range clusterNames(t.Name()) {
			lock, waiters := l.Keys(res)
			ls, err1 := rc.ClusterKeySlot(ctx, lock).Result()
			ws, err2 := rc.ClusterKeySlot(ctx, waiters).Result()
			if err := errors.Join(err1, err2); err != nil || ls != ws {
				t.Fatalf("%q: lock slot %d, waiters slot %d (%v); want one slot", res, ls, ws, err)
			}
			masters[masterOf(t, rc, lock)]++

			a, err := l.Acquire(ctx, res, "a", time.Minute)
			if err != nil || !a.Acquired {
				t.Fatalf("%q: acquire: got %+v, %v; want acquired", res, a, err)
			}
			b, err := l.Acquire(ctx, res, "b", time.Minute)
			if err != nil || b.Acquired || b.Lock.Owner != "a" || b.RetryAfter <= 0 {
				t.Fatalf("%q: contended acquire: got %+v, %v; want held by a with a retry time", res, b, err)
			}
			r, err := l.Renew(ctx, res, "a", a.Lock.Token, 2*time.Minute)
			if err != nil || r.Token != a.Lock.Token {
				t.Fatalf("%q: renew: got %+v, %v; want token %d", res, r, err, a.Lock.Token)
			}
			if _, err := l.Renew(ctx, res, "b", 0, time.Minute); !errors.Is(err, leasegate.ErrLockForbidden) {
				t.Fatalf("%q: renew by b: got %v, want ErrLockForbidden", res, err)
			}
			if got, err := l.Release(ctx, res, "a", a.Lock.Token); err != nil || got != leasegate.Released {
				t.Fatalf("%q: release: got %v, %v; want released", res, got, err)
			}
			if _, err := l.Status(ctx, res); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Fatalf("%q: status after release: got %v, want ErrLockNotHeld", res, err)
			}
			next, err := l.Acquire(ctx, res, "b", time.Minute)
			if err != nil || !next.Acquired || next.Lock.Token <= a.Lock.Token {
				t.Fatalf("%q: next holder: got %+v, %v; want a token above %d", res, next, err, a.Lock.Token)
			}
		}
		if len(masters) != 3 {
			t.Fatalf("names landed on %d masters (%v), want all 3", len(masters), masters)
		}
	})

	t.Run("a name in braces and the same name bare are two locks", func(t *testing.T) {
		l := wrap(redislock.New(rc, redislock.Config{}))
		base := t.Name()
		if got, err := l.Acquire(ctx, "{"+base+"}", "a", time.Minute); err != nil || !got.Acquired {
			t.Fatalf("acquire {name}: got %+v, %v; want acquired", got, err)
		}
		if got, err := l.Acquire(ctx, base, "b", time.Minute); err != nil || !got.Acquired {
			t.Fatalf("acquire name: got %+v, %v; want acquired (a different lock)", got, err)
		}
	})

	t.Run("with min-replicas, WAIT runs on the master that ran the script", func(t *testing.T) {
		// Only the first master gets a replica: a grant on its slots is
		// acknowledged, a grant elsewhere is not. WAIT sent to any other
		// node, or to every node, would get this wrong.
		withReplica := cl.Nodes[0].Addr()
		cl.AddReplica(t, cl.Nodes[0])
		l := wrap(redislock.New(rc, redislock.Config{MinReplicas: 1, ReplicaTimeout: time.Second}))
		plain := wrap(redislock.New(rc, redislock.Config{}))
		// Each name on a master without a replica waits out the
		// ReplicaTimeout, so the loop stops once it has seen two of each.
		var ok, undone int
		for _, res := range clusterNames(t.Name())[12:24] {
			if ok >= 2 && undone >= 2 {
				break
			}
			lock, _ := l.Keys(res)
			_, err := l.Acquire(ctx, res, "a", time.Minute)
			if masterOf(t, rc, lock) == withReplica {
				if err != nil {
					t.Fatalf("%q on the replicated master: got %v, want acquired", res, err)
				}
				ok++
				continue
			}
			if !errors.Is(err, redislock.ErrNotReplicated) {
				t.Fatalf("%q on a master without replica: got %v, want ErrNotReplicated", res, err)
			}
			if _, err := plain.Status(ctx, res); !errors.Is(err, leasegate.ErrLockNotHeld) {
				t.Fatalf("%q: status after undo: got %v, want ErrLockNotHeld", res, err)
			}
			undone++
		}
		if ok == 0 || undone == 0 {
			t.Fatalf("got %d acknowledged and %d undone grants, want some of each", ok, undone)
		}
	})
}

// TestListingOnRealCluster: on Cluster the index is written in a second
// step (another slot), and the listing still shows every live lease.
func TestListingOnRealCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	l := wrap(redislock.New(rc, redislock.Config{Prefix: uniquePrefix(t)}))
	o := redislock.NewOperator(rc, l.Locker, nil, redislock.OperatorOptions{})
	want := map[string]bool{}
	for _, res := range clusterNames("n") {
		mustAcquire(t, l, res, "a", time.Minute)
		want[res] = true
	}
	mustRelease(t, l, "n-3", "a")
	delete(want, "n-3")
	if _, err := o.ForceRelease(ctx, "", "n-4", "test", leasegate.RequestMeta{}); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	delete(want, "n-4")
	got := listAll(t, o, "", "", 7)
	if len(got) != len(want) {
		t.Errorf("listed %d leases, want %d: %v", len(got), len(want), names(got))
	}
	for _, h := range got {
		if !want[h.Resource] {
			t.Errorf("listed %q, which is not held", h.Resource)
		}
	}
	// On Cluster a release leaves its entry in the index (a listing or a
	// sweep prunes it): the sweep does not count it as held.
	mustAcquire(t, l, "n-3", "a", time.Minute)
	mustRelease(t, l, "n-3", "a")
	swept, err := o.Sweep(ctx, "", 7)
	if err != nil || swept.Held != len(want) {
		t.Errorf("Sweep: got %+v, %v; want %d held", swept, err, len(want))
	}
}
