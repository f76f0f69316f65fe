package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// With MinReplicas a permit's grant waits for the replicas, as a lock's
// does (docs/deployment.md): the fault suite found permits granted over
// the limit after Sentinel failovers while they did not.
func TestMinReplicasOnRealRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := func(owner string) leasegate.SemaphoreRequest {
		return leasegate.SemaphoreRequest{Name: "pool", Owner: owner, TTL: time.Minute, Limit: 2}
	}
	mustAcquire := func(t *testing.T, s *semaphore.Service, owner, what string) leasegate.SemaphoreResult {
		t.Helper()
		got, err := s.Acquire(ctx, "", req(owner))
		if err != nil || !got.Acquired {
			t.Fatalf("%s: got %+v, %v; want a permit", what, got, err)
		}
		return got
	}
	notReplicated := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, redislock.ErrNotReplicated) || !errors.Is(err, leasegate.ErrUnavailable) {
			t.Fatalf("%s: got %v, want ErrNotReplicated wrapping ErrUnavailable", what, err)
		}
	}
	replicated := func(p *redistest.Server) *semaphore.Service {
		return semaphore.New(p.Client(t), nil, redislock.Config{MinReplicas: 1, ReplicaTimeout: 200 * time.Millisecond})
	}

	t.Run("an acknowledged permit is on the replica when Acquire returns", func(t *testing.T) {
		t.Parallel()
		primary, replica := redistest.StartReplicated(t)
		s := replicated(primary)
		onReplica := semaphore.New(replica.Client(t), nil, redislock.Config{})
		for _, owner := range []string{"a", "b"} {
			got := mustAcquire(t, s, owner, "acquire by "+owner)
			st, err := onReplica.Status(ctx, "", "pool")
			if err != nil || len(st.Holders) == 0 || st.Holders[len(st.Holders)-1].Token == 0 {
				t.Fatalf("status on the replica after %s's grant: got %+v, %v", owner, st, err)
			}
			found := false
			for _, h := range st.Holders {
				found = found || (h.Owner == owner && h.Token == got.Permit.Token)
			}
			if !found {
				t.Fatalf("the replica's holders %+v lack %s's permit %d", st.Holders, owner, got.Permit.Token)
			}
		}
	})

	t.Run("without a replica the permit is undone and the caller told unavailable", func(t *testing.T) {
		t.Parallel()
		s := replicated(redistest.Start(t))
		_, err := s.Acquire(ctx, "", req("a"))
		notReplicated(t, "acquire", err)
		if st, err := s.Status(ctx, "", "pool"); !errors.Is(err, leasegate.ErrSemaphoreNotHeld) {
			t.Fatalf("status after the undone grant: got %+v, %v; want no permit", st, err)
		}
	})

	t.Run("a renew a hung replica does not acknowledge keeps the permit and its token", func(t *testing.T) {
		t.Parallel()
		primary, replica := redistest.StartReplicated(t)
		s := replicated(primary)
		got := mustAcquire(t, s, "a", "acquire")
		replica.Pause()
		_, err := s.Renew(ctx, "", "pool", "a", 2*time.Minute)
		replica.Resume()
		notReplicated(t, "renew with the replica paused", err)
		st, err := s.Status(ctx, "", "pool")
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Owner != "a" || st.Holders[0].Token != got.Permit.Token {
			t.Fatalf("status after the unconfirmed renew: got %+v, %v; want a's permit %d", st, err, got.Permit.Token)
		}
	})

	t.Run("a same-owner re-acquire a hung replica does not acknowledge keeps the permit", func(t *testing.T) {
		t.Parallel()
		primary, replica := redistest.StartReplicated(t)
		s := replicated(primary)
		got := mustAcquire(t, s, "a", "acquire")
		replica.Pause()
		_, err := s.Acquire(ctx, "", req("a"))
		replica.Resume()
		notReplicated(t, "re-acquire with the replica paused", err)
		st, err := s.Status(ctx, "", "pool")
		if err != nil || len(st.Holders) != 1 || st.Holders[0].Owner != "a" || st.Holders[0].Token != got.Permit.Token {
			t.Fatalf("status after the unconfirmed re-acquire: got %+v, %v; want a's permit %d", st, err, got.Permit.Token)
		}
	})

	t.Run("a grant the replica misses while paused is undone, and granted once it is back", func(t *testing.T) {
		t.Parallel()
		primary, replica := redistest.StartReplicated(t)
		s := replicated(primary)
		replica.Pause()
		_, err := s.Acquire(ctx, "", req("a"))
		replica.Resume()
		notReplicated(t, "acquire with the replica paused", err)
		if _, err := s.Status(ctx, "", "pool"); !errors.Is(err, leasegate.ErrSemaphoreNotHeld) {
			t.Fatalf("status after the undone grant: got %v, want no permit", err)
		}
		mustAcquire(t, s, "a", "acquire after the replica is back")
	})
}
