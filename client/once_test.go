package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// onceGateway is a gateway on a miniredis whose clock moves only when the
// test says (the returned Clock).
func onceGateway(t *testing.T) (*client.Client, contracttest.Clock) {
	t.Helper()
	b := redistest.OnMini(t)
	clock := contracttest.FrozenMiniredis(b)
	return contractGateway(t, "redis://"+b.Mini.Addr()), clock
}

func TestOnceRunsFnExactlyOnceForAHundredConcurrentCallers(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"miniredis", "a real redis-server"} {
		t.Run("on "+store, func(t *testing.T) {
			var c *client.Client
			if store == "miniredis" {
				c, _ = onceGateway(t)
			} else {
				c = realGatewayClient(t)
			}
			// Bounded: a claim left pending (its complete failed) with
			// miniredis's clock frozen would keep the others waiting.
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			var runs atomic.Int64
			var first sync.Once
			started, release := make(chan struct{}), make(chan struct{})
			const callers = 100
			results := make([]json.RawMessage, callers)
			errs := make([]error, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = c.Once(ctx, "reward", "order-1", func(ctx context.Context) (json.RawMessage, error) {
						n := runs.Add(1)
						first.Do(func() { close(started) })
						<-release // hold the claim while the others arrive
						return json.RawMessage(fmt.Sprintf(`{"paid_by_run": %d}`, n)), nil
					}, client.WithClaimBackoff(time.Millisecond, 20*time.Millisecond))
				}()
			}
			// Let fn finish once it has started; the others are then
			// waiting on claim-in-progress or arrive after the result.
			<-started
			close(release)
			wg.Wait()
			if got := runs.Load(); got != 1 {
				t.Errorf("fn ran %d times, want exactly once", got)
			}
			for i := range callers {
				if errs[i] != nil {
					t.Errorf("caller %d: %v", i, errs[i])
					continue
				}
				if !bytes.Equal(results[i], []byte(`{"paid_by_run": 1}`)) {
					t.Errorf("caller %d: got %s, want {\"paid_by_run\": 1}", i, results[i])
				}
			}
		})
	}
}

func TestAWorkerKilledMidFnLetsAnotherRunAfterTheLeaseExpires(t *testing.T) {
	t.Parallel()
	c, clock := onceGateway(t)
	// Bounded: with miniredis's clock frozen, a claim still pending
	// would keep Once waiting until the package's 10-minute timeout.
	ctx, cancelAll := context.WithTimeout(t.Context(), time.Minute)
	defer cancelAll()
	// The killed worker: it claimed and never completed, renewed or
	// abandoned.
	st, err := c.Claim(ctx, "daily-checkin", "user-42:2026-12-01", time.Second, client.WithOwner("dead-worker"))
	if err != nil || !st.Created {
		t.Fatalf("Claim: got %+v, %v", st, err)
	}
	// The waiting worker names itself: a claim call of its first Once
	// still in flight at the gateway when its ctx ends may be run after
	// the clock moves below, and then it is this worker's claim, which
	// its second Once takes up, not a stranger's that would stay pending
	// on the frozen clock.
	me := client.WithOnceOwner("waiting-worker")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Once(short, "daily-checkin", "user-42:2026-12-01", func(context.Context) (json.RawMessage, error) {
		t.Error("fn ran while the dead worker's lease was live")
		return nil, nil
	}, me)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Once while the lease is live: got %v, want to wait until ctx ends", err)
	}
	clock(t, time.Second+time.Millisecond)
	ran := false
	got, err := c.Once(ctx, "daily-checkin", "user-42:2026-12-01", func(context.Context) (json.RawMessage, error) {
		ran = true
		return json.RawMessage(`"checked in"`), nil
	}, me)
	if err != nil || !ran || string(got) != `"checked in"` {
		t.Fatalf("Once after expiry: got %s, %v (ran %v); want fn run and its result", got, err, ran)
	}
	// The dead worker, were it to come back, cannot complete.
	if _, err := c.CompleteClaim(ctx, st.Claim, json.RawMessage(`"late"`), 0); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("stale complete: got %v, want ErrForbidden", err)
	}
}

func TestOnceAbandonsWhenFnFailsSoTheNextCallerRunsAtOnce(t *testing.T) {
	t.Parallel()
	c, _ := onceGateway(t)
	boom := errors.New("provider down")
	_, err := c.Once(t.Context(), "reward", "r1", func(context.Context) (json.RawMessage, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
	got, err := c.Once(t.Context(), "reward", "r1", func(context.Context) (json.RawMessage, error) { return json.RawMessage(`2`), nil })
	if err != nil || string(got) != "2" {
		t.Errorf("second Once: got %s, %v; want fn run again, result 2", got, err)
	}
}

func TestOnceResultsKeepTheirBytes(t *testing.T) {
	t.Parallel()
	c, _ := onceGateway(t)
	want := json.RawMessage("{\"b\": 1,\n  \"a\" : \"caf\\u00e9\", \"n\": 1.50e3}")
	for i := range 2 {
		got, err := c.Once(t.Context(), "reward", "bytes", func(context.Context) (json.RawMessage, error) { return want, nil })
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("call %d: got %q, %v; want %q byte for byte", i, got, err, want)
		}
	}
	st, err := c.GetClaim(t.Context(), "reward", "bytes")
	if err != nil || !bytes.Equal(st.Result, want) {
		t.Errorf("GetClaim: got %q, %v; want %q", st.Result, err, want)
	}
}

func TestOnceKeepsTheLeaseAliveWhileFnRuns(t *testing.T) {
	t.Parallel()
	c := realGatewayClient(t)
	// fn runs for longer than the claim's 3 s lease; KeepAlive renews it,
	// so a second caller meanwhile is told claim-in-progress. Three
	// seconds, not one: a renewal gets a third of the TTL, and with a
	// one-second lease renewals slower than 333 ms (race detector, CI's
	// staticcheck and fuzz run on the same 2 cores) lost it, correctly.
	got, err := c.Once(t.Context(), "reward", "slow", func(ctx context.Context) (json.RawMessage, error) {
		deadline := time.Now().Add(4 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := c.Claim(ctx, "reward", "slow", time.Second); !errors.Is(err, leasegate.ErrClaimInProgress) {
				return nil, fmt.Errorf("a second caller got %v, want ErrClaimInProgress", err)
			}
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(200 * time.Millisecond): // the work being slow
			}
		}
		return json.RawMessage(`"done"`), nil
	}, client.WithClaimTTL(3*time.Second))
	if err != nil || string(got) != `"done"` {
		t.Fatalf("got %s, %v; want \"done\"", got, err)
	}
}

// realGatewayClient is a client of a gateway on a real redis-server.
func realGatewayClient(t *testing.T) *client.Client {
	t.Helper()
	return contractGateway(t, redistest.Start(t).URL())
}
