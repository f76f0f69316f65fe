package bench

import (
	"math"
	"math/bits"
	"time"
)

// histogram is a log-linear latency histogram (HDR-like): values below
// 64 ns are exact, above that each power of two is split into 64
// buckets, so a reported percentile is within 1/64 (1.6 %) above the
// true value. The maximum is kept exactly. It is the one latency record
// of the package: Run's phases (a cycle, a hand-off) and Load's
// operations; a worker keeps its own and they are merged at the end, so
// recording takes no lock and, once its buckets exist, no allocation.
type histogram struct {
	counts []int64
	n      int64
	max    time.Duration
	sum    time.Duration
}

const histSubBits = 6
const histSub = 1 << histSubBits

func histBucket(v int64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - histSubBits
	return (shift+1)*histSub + int((v>>shift)&(histSub-1))
}

// histUpper is the largest value of bucket b.
func histUpper(b int) int64 {
	if b < histSub {
		return int64(b)
	}
	shift := b/histSub - 1
	low := int64(histSub+b%histSub) << shift
	return low + (int64(1) << shift) - 1
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	b := histBucket(int64(d))
	if b >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, b+1-len(h.counts))...)
	}
	h.counts[b]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	if len(o.counts) > len(h.counts) {
		h.counts = append(h.counts, make([]int64, len(o.counts)-len(h.counts))...)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

// quantile returns the value at quantile q (0 < q <= 1): the upper bound
// of the bucket holding the ceil(q*n)-th smallest sample, at most max.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histUpper(b)), h.max)
		}
	}
	return h.max
}
