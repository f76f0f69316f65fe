package logtest

import (
	"fmt"
	"sync"
	"testing"
)

func TestConcurrentWritesKeepEveryLine(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(&b, "{\"event\":\"e%d\",\"n\":%d}\n", i%2, i)
		}()
	}
	wg.Wait()
	if got := len(b.Records(t)); got != 50 {
		t.Errorf("got %d records, want 50", got)
	}
	if got := len(b.Events(t, "e1")); got != 25 {
		t.Errorf("got %d e1 events, want 25", got)
	}
}
