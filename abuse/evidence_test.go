package abuse

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// A flag record keeps the times of the last attempts of the window that
// flagged, at most leasegate.MaxEvidence, packed in one field: memory per
// (lock, user) is bounded however hard a client hammers.
func TestFlagEvidenceKeepsTheLastAttemptsOfTheWindow(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		svc, _ := newService(t, b, policies(5))
		const step = 10 * time.Millisecond
		var at []time.Time
		attempt := func(t *testing.T) leasegate.UserLockResult {
			t.Helper()
			res, err := svc.Attempt(ctx, "", "login", "eve", time.Minute, leasegate.RequestMeta{})
			if err != nil {
				t.Fatal(err)
			}
			at = append(at, res.WindowStart) // replaced below by the real time
			return res
		}
		first := attempt(t)
		at[0] = first.WindowStart
		evidence := func(t *testing.T) []time.Time {
			t.Helper()
			uf, err := svc.Get(ctx, "", "eve")
			if err != nil {
				t.Fatal(err)
			}
			return uf.Flags[0].AttemptsAt
		}
		for i := 1; i < 60; i++ {
			b.Advance(t, step)
			attempt(t)
			if b.Mini != nil {
				at[i] = b.Now()
			}
			if i == 4 {
				// At the flag: the five attempts so far.
				if got := evidence(t); len(got) != 5 || (b.Mini != nil && !sameTimes(got, at)) {
					t.Fatalf("at the flag: got evidence %v, want %v", got, at)
				}
			}
		}
		got := evidence(t)
		if len(got) != leasegate.MaxEvidence {
			t.Fatalf("got %d times, want the last %d", len(got), leasegate.MaxEvidence)
		}
		if b.Mini != nil && !sameTimes(got, at[len(at)-leasegate.MaxEvidence:]) {
			t.Errorf("got evidence %v, want the last %d attempts %v", got, leasegate.MaxEvidence, at[len(at)-leasegate.MaxEvidence:])
		}
		for i := 1; i < len(got); i++ {
			if !got[i].After(got[i-1]) {
				t.Errorf("evidence not oldest first at %d: %v", i, got)
			}
		}
		// Bounded: the counter's packed list holds at most MaxEvidence
		// offsets, each at most the window's length in milliseconds.
		k := svc.keys.User("", "eve")
		for _, key := range []struct{ key, field string }{{k.Counter("login"), "at"}, {k.Flag("login"), "evidence"}} {
			packed, err := b.RDB.HGet(ctx, key.key, key.field).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(packed, ",") + 1; n != leasegate.MaxEvidence || len(packed) > leasegate.MaxEvidence*len("60000,") {
				t.Errorf("%s %s: got %d entries in %d bytes", key.key, key.field, n, len(packed))
			}
		}
	})
}

func sameTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
