// Package contracttest is the behaviour every implementation of the domain's
// service interfaces promises, as one test suite: Locks for
// leasegate.LockService, UserLocks for leasegate.UserLockService and
// Flags for leasegate.FlagRegistry. The same assertions run on the
// in-process services (redislock and abuse tests, on miniredis and on a
// real redis-server) and through the Go client against a gateway (client
// tests), so a behaviour that holds in one holds in all.
//
// Only what every implementation answers is asserted: the gateway does
// not disclose a contended lease's holder, so the suite checks
// RetryAfter but not AcquireResult.Lock; its user-lock answer has no
// FlaggedNow or WindowStart. Each package's own tests cover the rest.
//
// The suite uses tenant "" throughout (over HTTP the API key decides the
// tenant; see client.Client.Locks).
package contracttest

import (
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// Clock makes at least d pass on the clock that decides expiry: the
// Redis server's (its TIME and its key TTLs).
type Clock func(t *testing.T, d time.Duration)

// FrozenMiniredis stops the miniredis clock of b at the current time (to
// the millisecond), so a gateway's own timers agree with it, and returns
// the Clock that moves it (b.Advance: SetTime for the scripts' TIME,
// FastForward for TTLs). Nothing expires unless the test says so, and
// nothing waits for real time.
func FrozenMiniredis(b *redistest.Backend) Clock {
	b.SetTime(time.Now().UTC().Truncate(time.Millisecond))
	return func(t *testing.T, d time.Duration) { b.Advance(t, d) }
}

// answer is what a call made in the background returned.
type answer[T any] struct {
	res T
	err error
}

// inBackground makes call in a goroutine (a waiting acquire, say); its
// answer arrives on the channel.
func inBackground[T any](call func() (T, error)) <-chan answer[T] {
	got := make(chan answer[T], 1)
	go func() {
		res, err := call()
		got <- answer[T]{res, err}
	}()
	return got
}

// storeCall is one call of a service under a store outage.
type storeCall struct {
	name string
	call func() error
}

// needOutage skips the case when the backend cannot fail its store.
func needOutage(t *testing.T, outage func(t *testing.T)) {
	t.Helper()
	if outage == nil {
		t.Skip("the backend has no way to fail its store")
	}
}

// wantUnavailable checks that each call fails with
// leasegate.ErrUnavailable.
func wantUnavailable(t *testing.T, calls []storeCall) {
	t.Helper()
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, leasegate.ErrUnavailable) {
			t.Errorf("%s: got %v, want ErrUnavailable", c.name, err)
		}
	}
}

// beyond is how far past an expiry the suite moves the clock: a
// millisecond is enough for a frozen clock, and a real one only ever
// passes it.
const beyond = time.Millisecond
