package bench

import (
	"context"
	"sync"
)

// budget hands out request slots. Unlimited (n = 0) it only stops at the
// deadline. Limited, a worker takes the slots of a whole iteration (2 for
// acquire+release) up front and gives back what it did not use, so the
// total is exactly n: when one slot is left and nothing is in flight that
// could give one back, the worker gets that single slot.
type budget struct {
	ctx     context.Context
	limited bool

	mu       sync.Mutex
	cond     *sync.Cond
	left     int
	inflight int
}

func newBudget(ctx context.Context, n int) *budget {
	b := &budget{ctx: ctx, limited: n > 0, left: n}
	b.cond = sync.NewCond(&b.mu)
	if b.limited {
		// Wake the waiters when the run ends.
		go func() {
			<-ctx.Done()
			b.mu.Lock()
			b.cond.Broadcast()
			b.mu.Unlock()
		}()
	}
	return b
}

// take returns how many slots the caller may use: want, 1 (the last slot
// of a limited budget), or 0 to stop.
func (b *budget) take(want int) int {
	if !b.limited {
		if b.ctx.Err() != nil {
			return 0
		}
		return want
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		switch {
		case b.ctx.Err() != nil || b.left == 0:
			return 0
		case b.left >= want:
			b.left -= want
			b.inflight++
			return want
		case b.inflight == 0:
			n := b.left
			b.left = 0
			b.inflight++
			return n
		}
		b.cond.Wait()
	}
}

// done ends an iteration that used fewer slots than it took.
func (b *budget) done(unused int) {
	if !b.limited {
		return
	}
	b.mu.Lock()
	b.left += unused
	b.inflight--
	b.cond.Broadcast()
	b.mu.Unlock()
}

// spent reports whether a limited budget was used up.
func (b *budget) spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limited && b.left == 0
}
