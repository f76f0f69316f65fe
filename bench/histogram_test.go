package bench

import (
	"testing"
	"time"
)

func TestHistogramQuantilesAreWithinOneBucket(t *testing.T) {
	t.Parallel()
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}, {1, time.Millisecond}} {
		got := h.quantile(tc.q)
		if got < tc.want || got > tc.want+tc.want/histSub {
			t.Errorf("got p%v = %v, want %v to %v", tc.q*100, got, tc.want, tc.want+tc.want/histSub)
		}
	}
	if h.max != time.Millisecond || h.n != 1000 {
		t.Errorf("got max %v of %d samples, want 1ms of 1000", h.max, h.n)
	}
	for v := int64(0); v < 1<<20; v += 7 {
		if b := histBucket(v); histUpper(b) < v || (b > 0 && histUpper(b-1) >= v) {
			t.Fatalf("got %d in bucket %d [..%d], previous bucket ends at %d", v, b, histUpper(b), histUpper(b-1))
		}
	}
}
