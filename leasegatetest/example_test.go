package leasegatetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/leasegatetest"
)

// payReward is the code under test, a service's: it pays the reward of
// an order at most once, whichever worker runs it, and says who paid.
func payReward(ctx context.Context, c *client.Client, worker, order string, pay func()) (string, error) {
	res, err := c.Once(ctx, "rewards", order, func(context.Context) (json.RawMessage, error) {
		pay()
		return json.Marshal("paid by " + worker)
	}, client.WithOnceOwner(worker))
	if err != nil {
		return "", err
	}
	var who string
	err = json.Unmarshal(res, &who)
	return who, err
}

// A worker claims an order's reward and dies before paying; the next
// worker is refused until the claim's lease has run out, which
// FastForward makes happen at once; after that nobody pays again.
func Example_onlyOneWorkerPaysTheReward() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.done()
	gw := leasegatetest.NewServer(t)
	c := gw.Client()
	ctx := context.Background()
	payments := 0
	pay := func() { payments++ }

	// worker-1 claims order-1 for 30 s, then crashes.
	if _, err := c.Claim(ctx, "rewards", "order-1", 30*time.Second, client.WithOwner("worker-1")); err != nil {
		fmt.Println(err)
		return
	}
	_, err := c.Claim(ctx, "rewards", "order-1", 30*time.Second, client.WithOwner("worker-2"))
	fmt.Println("worker-2 while worker-1's claim lasts:", errors.Is(err, leasegate.ErrClaimInProgress))

	gw.FastForward(30 * time.Second)
	for _, w := range []string{"worker-2", "worker-3"} {
		who, err := payReward(ctx, c, w, "order-1", pay)
		fmt.Println(w+":", who, err)
	}
	fmt.Println("payments:", payments)
	// Output:
	// worker-2 while worker-1's claim lasts: true
	// worker-2: paid by worker-2 <nil>
	// worker-3: paid by worker-2 <nil>
	// payments: 1
}

// The 5th attempt on a user lock within its window flags the user; when
// the window has passed (FastForward), the next attempt opens a new one.
func Example_theUserIsFlaggedAtTheFifthAttempt() {
	t := newExampleT() // in a test: the test's *testing.T
	defer t.done()
	gw := leasegatetest.NewServer(t) // the default policy: 5 attempts
	c := gw.Client()
	ctx := context.Background()

	for range 5 {
		res, err := c.UserLock(ctx, "password-reset", "user-42", time.Minute)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("attempt %d: acquired=%v flagged=%v\n", res.Attempts, res.Acquired, res.Flagged)
	}
	gw.FastForward(time.Minute)
	res, err := c.UserLock(ctx, "password-reset", "user-42", time.Minute)
	fmt.Printf("a minute later: attempt %d, acquired=%v, %v\n", res.Attempts, res.Acquired, err)
	// Output:
	// attempt 1: acquired=true flagged=false
	// attempt 2: acquired=false flagged=false
	// attempt 3: acquired=false flagged=false
	// attempt 4: acquired=false flagged=false
	// attempt 5: acquired=false flagged=true
	// a minute later: attempt 1, acquired=true, <nil>
}

// exampleT stands in for the *testing.T an Example does not have: it
// implements what NewServer uses (Helper, Cleanup, Fatalf, Errorf) and
// runs the cleanups at done, as the testing package does at the end of a
// test.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (e *exampleT) Helper()                           {}
func (e *exampleT) Cleanup(f func())                  { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (e *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (e *exampleT) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}
