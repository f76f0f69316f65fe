package redistest

import "sync"

// Burst makes call(i) for every i in [0, n) at once, each in a goroutine
// of its own held back until all have started, and returns when every
// call has: a burst of concurrent requests on one key, for the tests that
// race them. A call reports a failure with t.Error, never t.Fatal.
func Burst(n int, call func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			call(i)
		}()
	}
	close(start)
	wg.Wait()
}
