package main

import (
	"testing"
	"time"
)

func TestHandoffResult(t *testing.T) {
	ms := time.Millisecond
	turns := []turn{
		{locked: 0, unlockCalled: 1 * ms, unlocked: 3 * ms},
		// got it 2 ms after the Unlock above returned, 4 ms after the call
		{locked: 5 * ms, unlockCalled: 6 * ms, unlocked: 9 * ms},
		// had it before the Unlock above returned: early, 0 from the return
		{locked: 8 * ms, unlockCalled: 10 * ms, unlocked: 11 * ms},
		// after the measured time: not counted
		{locked: 20 * ms, unlockCalled: 21 * ms, unlocked: 22 * ms},
	}
	res := handoffResult(turns, 10*ms)
	if res.Ops != 2 || res.Early != 1 {
		t.Fatalf("got %d hand-offs, %d early; want 2, 1", res.Ops, res.Early)
	}
	if got, want := res.OpsPerSec, 200.0; got != want {
		t.Errorf("hand-offs/s: got %v, want %v", got, want)
	}
	// nearest rank over {0, 2 ms}: p50 is the first, p99 the second
	if res.P50ms != 0 || res.P99ms != 2 {
		t.Errorf("from the return: got p50 %v ms, p99 %v ms; want 0, 2", res.P50ms, res.P99ms)
	}
	if res.CallP50ms != 2 || res.CallP99ms != 4 {
		t.Errorf("from the call: got p50 %v ms, p99 %v ms; want 2, 4", res.CallP50ms, res.CallP99ms)
	}
}

func TestHandoffResultOfOneTurn(t *testing.T) {
	res := handoffResult([]turn{{locked: time.Millisecond}}, time.Second)
	if res.Ops != 0 || res.P50ms != 0 || res.OpsPerSec != 0 {
		t.Errorf("one turn: got %+v, want no hand-off", res)
	}
}
