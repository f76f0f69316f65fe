package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/bench"
)

// The hand-off phases (-handoff): every client wants ONE resource; the
// holder releases it as soon as it is granted, and the next waiting client
// gets it. A cycle is one grant, so cycles/s are hand-offs/s; the latency
// reported is from the moment a release's answer reaches its client to
// the moment the next holder's grant answer reaches that one (handoffClock).
//
//	handoff  POST /locks/{r} with wait_ms (waits in the gateway's FIFO
//	         queue, woken by the release's PUBLISH), DELETE when granted
//	blpop    the raw-Redis floor of a FIFO hand-off: one token in a list,
//	         taken with BLPOP (Redis queues blocked clients FIFO and hands
//	         an LPUSHed element straight to the oldest), given back with
//	         LPUSH. No lease, no expiry, no fencing token, no owner check:
//	         the least any Redis hand-off can cost, one command each way.
//
// SET NX PX with a client-side retry is not used as the floor: it does
// not queue, so its rate depends on the retry interval chosen, not on
// Redis.

// handoffWait is the wait_ms of a waiting acquire (and BLPOP's timeout):
// far longer than a turn of the queue at MaxConcurrency clients.
const handoffWait = 30 * time.Second

// handoffClock pairs each release with the grant that follows it. Grants
// of one resource are seen in the order they were made: a holder notes
// its grant before it sends its release, and the next grant can only be
// made after that release. So the k-th grant noted is hand-off k, and the
// holder notes its release's answer under the same k.
type handoffClock struct {
	mu       sync.Mutex
	grants   []time.Time
	releases []time.Time // by the index of the grant released
	// held is each worker's index of its current grant.
	held []int
}

func newHandoffClock(workers int) *handoffClock {
	return &handoffClock{held: make([]int, workers)}
}

// granted notes that worker i's grant answer came now.
func (h *handoffClock) granted(i int) {
	t := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grants = append(h.grants, t)
	h.held[i] = len(h.grants) - 1
}

// released notes that worker i's release answer came now.
func (h *handoffClock) released(i int) {
	t := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.held[i]
	for len(h.releases) <= k {
		h.releases = append(h.releases, time.Time{})
	}
	h.releases[k] = t
}

// TakeLatencies returns the release-to-next-grant times noted since the
// last call, and forgets them. A next grant seen before the release's
// own answer (both answers can leave in the same instant) counts as 0.
func (h *handoffClock) TakeLatencies() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []time.Duration{}
	for k := 1; k < len(h.grants); k++ {
		if k-1 < len(h.releases) && !h.releases[k-1].IsZero() {
			out = append(out, max(0, h.grants[k].Sub(h.releases[k-1])))
		}
	}
	h.grants, h.releases = nil, nil
	return out
}

// tokenFloor is the blpop phase.
type tokenFloor struct {
	*handoffClock
	rdb *redis.Client
	key string
}

func newTokenFloor(ctx context.Context, opt *redis.Options, cfg Config, runID string) (*tokenFloor, error) {
	o := *opt
	// A blocked BLPOP holds its connection.
	o.PoolSize = cfg.Concurrency + 1
	f := &tokenFloor{
		handoffClock: newHandoffClock(cfg.Concurrency),
		rdb:          redis.NewClient(&o),
		key:          "bench:{" + runID + "}:token",
	}
	if err := f.rdb.LPush(ctx, f.key, "token").Err(); err != nil {
		_ = f.rdb.Close()
		return nil, fmt.Errorf("bench: blpop: %w", err)
	}
	return f, nil
}

func (f *tokenFloor) Name() string    { return "blpop" }
func (f *tokenFloor) Sends() []string { return []string{"blpop", "lpush"} }

func (f *tokenFloor) close() {
	_ = f.rdb.Del(context.Background(), f.key).Err()
	_ = f.rdb.Close()
}

func (f *tokenFloor) Acquire(ctx context.Context, i int) error {
	if _, err := f.rdb.BLPop(ctx, handoffWait, f.key).Result(); err != nil {
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("BLPOP %s: no token within %v", f.key, handoffWait)
		}
		return err
	}
	f.granted(i)
	return nil
}

func (f *tokenFloor) Release(ctx context.Context, i int) error {
	if err := f.rdb.LPush(ctx, f.key, "token").Err(); err != nil {
		return err
	}
	f.released(i)
	return nil
}

// httpHandoff is a hand-off over HTTP: a cycle whose clock notes each
// grant and release.
type httpHandoff struct {
	*bench.HTTPCycle
	*handoffClock
}

// clocked gives c a hand-off clock.
func clocked(c *bench.HTTPCycle, workers int) httpHandoff {
	h := httpHandoff{HTTPCycle: c, handoffClock: newHandoffClock(workers)}
	c.OnGrant, c.OnRelease = h.granted, h.released
	return h
}

// newHandoff is the gateway's hand-off phase, on the lock phase's gateway.
func newHandoff(g *bench.Gateway, cfg Config, runID string) httpHandoff {
	return clocked(g.Cycle(cfg.Config, "handoff", "/locks/bench-"+runID+"-handoff", true, `,"wait_ms":`+strconv.FormatInt(handoffWait.Milliseconds(), 10)), cfg.Concurrency)
}
