package bench

import (
	"strings"
	"testing"
	"time"
)

func TestFenceTracker(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	t.Run("a grant while another owner holds the resource is a violation", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0, time.Minute)
		tr.grant("r", "b", 2, t0, time.Minute)
		if tr.violations != 1 || !strings.Contains(tr.shown[0], "while a still held token 1") {
			t.Errorf("got %d violations %q, want one naming a as the holder", tr.violations, tr.shown)
		}
	})
	t.Run("a grant after the holder let go is fine", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0, time.Minute)
		tr.drop("r", "a")
		tr.grant("r", "b", 2, t0, time.Minute)
		tr.grant("other", "c", 1, t0, time.Minute)
		if tr.violations != 0 || tr.grants != 3 {
			t.Errorf("got %d violations %q in %d grants, want none in 3", tr.violations, tr.shown, tr.grants)
		}
	})
	t.Run("a grant after the holder's lease ended by the local clock is fine", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 1, t0.Add(-2*time.Second), time.Second)
		tr.grant("r", "b", 2, t0, time.Minute)
		if tr.violations != 0 {
			t.Errorf("got violations %q, want none", tr.shown)
		}
	})
	t.Run("a token not above the previous holder's is a violation", func(t *testing.T) {
		tr := newFenceTracker()
		tr.grant("r", "a", 5, t0, time.Minute)
		tr.drop("r", "a")
		tr.grant("r", "b", 5, t0, time.Minute)
		tr.drop("r", "b")
		tr.grant("r", "c", 4, t0, time.Minute)
		if tr.violations != 2 {
			t.Errorf("got %d violations %q, want 2", tr.violations, tr.shown)
		}
	})
}
