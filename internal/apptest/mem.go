package apptest

import (
	"runtime"
	"testing"
)

// Mem is what the Go heap, stacks and goroutines held when StartMem ran,
// for a memory benchmark that makes b.N long-lived objects (waiters,
// event streams) and reports what each one costs.
type Mem struct {
	before     runtime.MemStats
	goroutines int
}

// StartMem collects garbage and records the heap, stacks and goroutines
// before the benchmark makes its objects.
func StartMem() *Mem {
	m := &Mem{}
	runtime.GC()
	runtime.ReadMemStats(&m.before)
	m.goroutines = runtime.NumGoroutine()
	return m
}

// Report stops b's timer, collects garbage and reports the growth since
// StartMem divided by b.N: heap-B/<per>, stack-B/<per> and
// goroutines/<per>.
func (m *Mem) Report(b *testing.B, per string) {
	b.Helper()
	b.StopTimer()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	n := float64(b.N)
	b.ReportMetric(float64(after.HeapInuse-m.before.HeapInuse)/n, "heap-B/"+per)
	b.ReportMetric(float64(after.StackInuse-m.before.StackInuse)/n, "stack-B/"+per)
	b.ReportMetric(float64(runtime.NumGoroutine()-m.goroutines)/n, "goroutines/"+per)
}
