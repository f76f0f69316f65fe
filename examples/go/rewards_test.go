package rewards_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/leasegatetest"

	"example.com/rewards"
)

// gateways runs test on the embedded store, and on the Redis at
// $REDIS_URL when it is set (CI sets it).
func gateways(t *testing.T, test func(t *testing.T, gw *leasegatetest.Server)) {
	t.Run("on the embedded store", func(t *testing.T) {
		t.Parallel()
		test(t, leasegatetest.NewServer(t))
	})
	if url := os.Getenv("REDIS_URL"); url != "" {
		t.Run("on "+url, func(t *testing.T) {
			t.Parallel()
			test(t, leasegatetest.NewServer(t, leasegatetest.WithRedisURL(url)))
		})
	}
}

func TestEightWorkersPayTheRewardOnce(t *testing.T) {
	gateways(t, func(t *testing.T, gw *leasegatetest.Server) {
		var payments atomic.Int64
		svc := &rewards.Service{Gateway: gw.Client(), Pay: func(context.Context, string) error {
			payments.Add(1)
			return nil
		}}
		var wg sync.WaitGroup
		payers := make(chan string, 8)
		for i := range 8 {
			wg.Go(func() {
				who, err := svc.PayReward(context.Background(), string(rune('a'+i)), "order-1")
				if err != nil {
					t.Error(err)
				}
				payers <- who
			})
		}
		wg.Wait()
		close(payers)
		first := <-payers
		for who := range payers {
			if who != first {
				t.Errorf("workers disagree on who paid: %q and %q", first, who)
			}
		}
		if n := payments.Load(); n != 1 {
			t.Errorf("got %d payments, want 1", n)
		}
	})
}

func TestAWorkerThatDiesLeavesTheRewardToTheNext(t *testing.T) {
	gw := leasegatetest.NewServer(t)
	paid := 0
	svc := &rewards.Service{Gateway: gw.Client(), Pay: func(context.Context, string) error { paid++; return nil }}
	ctx := context.Background()
	// worker-1 claims the order and dies before paying.
	if _, err := gw.Client().Claim(ctx, "rewards", "order-2", time.Minute, client.WithOwner("worker-1")); err != nil {
		t.Fatal(err)
	}
	gw.FastForward(time.Minute)
	if who, err := svc.PayReward(ctx, "worker-2", "order-2"); err != nil || who != "worker-2" {
		t.Fatalf("got %q, %v, want worker-2 to pay once worker-1's claim has expired", who, err)
	}
	if who, err := svc.PayReward(ctx, "worker-3", "order-2"); err != nil || who != "worker-2" || paid != 1 {
		t.Fatalf("got %q, %v and %d payments, want worker-2's payment only", who, err, paid)
	}
}

func TestTheFifthResetInAWindowIsRefused(t *testing.T) {
	gw := leasegatetest.NewServer(t)
	mails := 0
	svc := &rewards.Service{Gateway: gw.Client(), SendReset: func(string) { mails++ }}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		if err := svc.ResetPassword(ctx, "user-42"); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if err := svc.ResetPassword(ctx, "user-42"); !errors.Is(err, rewards.ErrTooManyResets) {
		t.Fatalf("got %v at the 5th request, want ErrTooManyResets", err)
	}
	gw.FastForward(10 * time.Minute)
	if err := svc.ResetPassword(ctx, "user-42"); err != nil {
		t.Fatalf("got %v in the next window, want a new mail", err)
	}
	if mails != 2 {
		t.Errorf("got %d mails, want 2 (one per window)", mails)
	}
}
