package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasegate/leasegate/metrics"
)

// TestKnownGaugeIsExportedOnlyWhileKnown: nothing before the first Set,
// the value after it, nothing again after Forget.
func TestKnownGaugeIsExportedOnlyWhileKnown(t *testing.T) {
	m := metrics.NewStandalone()
	samples := func() int {
		t.Helper()
		n, err := testutil.GatherAndCount(m.Registry(), "leasegate_locks_held")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := samples(); n != 0 {
		t.Errorf("before any Set: got %d samples, want none", n)
	}
	m.LocksHeld.Set(3)
	if n := samples(); n != 1 {
		t.Fatalf("after Set(3): got %d samples, want 1", n)
	}
	if got := testutil.ToFloat64(m.LocksHeld); got != 3 {
		t.Errorf("after Set(3): got %v, want 3", got)
	}
	m.LocksHeld.Forget()
	if n := samples(); n != 0 {
		t.Errorf("after Forget: got %d samples, want none", n)
	}
}
