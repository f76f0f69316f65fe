package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// workload is the clients' side of a scenario: clients goroutines over
// resources, each acquiring (sometimes waiting), holding while writing to
// the store, renewing and releasing, every call recorded in h.
type workload struct {
	base      string
	resources []string
	clients   int
	h         *history
	store     *store
	http      *http.Client
	// waiting counts acquires with wait_ms in flight.
	waiting atomic.Int64
	// elections: the clients campaign (acquire), campaign again (renew)
	// and resign (release) on elections instead of locks. An election is
	// a lease of the lock engine (docs/elections.md), so the same model
	// and checkers judge it with candidate = owner and term = token: at
	// most one leader at a time, so one per term; a new term above every
	// earlier one; a resigned or expired term never granted again.
	elections bool
}

// clientTimeout bounds every call of the workload: the gateway's request
// timeout plus the longest wait_ms, with margin.
const (
	requestTimeout = 2 * time.Second
	maxWaitMs      = 1500
	clientTimeout  = requestTimeout + maxWaitMs*time.Millisecond + 4*time.Second
	// beliefMargin is taken off a holder's belief in its lease: a lease
	// granted after the call began lasts at least ttl from the call, by
	// clocks that run at one rate (loopback, one host); the margin
	// covers the Redis clock's millisecond truncation.
	beliefMargin = int64(20 * time.Millisecond)
	// maxIterations bounds each client's loop whatever the duration.
	maxIterations = 1 << 20
)

func newWorkload(base, scenario string, resources, clients int) *workload {
	h := newHistory()
	w := &workload{base: base, clients: clients, h: h, store: newStore(h)}
	for i := 0; i < resources; i++ {
		w.resources = append(w.resources, fmt.Sprintf("%s/r%d", scenario, i))
	}
	w.http = keepAlive(clients)
	return w
}

// newElectionWorkload is newWorkload on elections: names of its own, and
// the election routes.
func newElectionWorkload(base, scenario string, names, clients int) *workload {
	w := newWorkload(base, scenario+"/election", names, clients)
	w.elections = true
	return w
}

// keepAlive is the HTTP client of a workload of clients goroutines: a
// keep-alive connection each, bounded by clientTimeout.
func keepAlive(clients int) *http.Client {
	return &http.Client{
		Timeout: clientTimeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: time.Second}).DialContext,
			MaxIdleConns:        2 * clients,
			MaxIdleConnsPerHost: 2 * clients,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// run starts the clients and returns a function that waits for them.
func (w *workload) run(ctx context.Context, seed uint64) (wait func()) {
	var wg sync.WaitGroup
	for c := 0; c < w.clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.client(ctx, c, rand.New(rand.NewPCG(seed, uint64(c))))
		}()
	}
	return func() {
		wg.Wait()
		w.http.CloseIdleConnections()
	}
}

// pause waits d or until ctx ends: workload pacing, not synchronisation.
// ledger is the history of a side workload (lock sets, semaphores) and
// its answers outside the contract (the first 10). It is safe for
// concurrent use.
type ledger[T any] struct {
	mu  sync.Mutex
	ops []T
	odd []string
}

func (l *ledger[T]) add(o T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, o)
}

func (l *ledger[T]) unexpected(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.odd) < 10 {
		l.odd = append(l.odd, s)
	}
}

// snapshot returns the history and the answers outside the contract.
func (l *ledger[T]) snapshot() ([]T, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops), slices.Clone(l.odd)
}

// runClients runs n clients, each with a random stream of its own (seed,
// stream+id), until ctx ends; wait waits for them and closes hc's idle
// connections.
func runClients(ctx context.Context, n int, seed, stream uint64, hc *http.Client, client func(ctx context.Context, id int, r *rand.Rand)) (wait func()) {
	var wg sync.WaitGroup
	for c := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client(ctx, c, rand.New(rand.NewPCG(seed, stream+uint64(c))))
		}()
	}
	return func() {
		wg.Wait()
		hc.CloseIdleConnections()
	}
}

// sideWorkload is a side workload (lock sets, semaphores, claims): its
// clients and its ledger.
type sideWorkload[T any] interface {
	run(ctx context.Context, seed uint64) (wait func())
	snapshot() ([]T, []string)
}

// runControl runs the side workload w, whose clients talk to fake (an
// in-process service of a negative control), for d and returns its
// history; an answer outside the contract fails the test.
func runControl[T any](t *testing.T, fake http.Handler, d time.Duration, newW func(base string) sideWorkload[T]) []T {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	w := newW(srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w.run(ctx, uint64(time.Now().UnixNano()))()
	ops, odd := w.snapshot()
	if len(odd) > 0 {
		t.Fatalf("answers outside the contract: %q", odd)
	}
	return ops
}

// postJSON sends body as JSON to url with hc and reads the answer; ok is
// false when no answer came (the outcome is unknown).
func postJSON(ctx context.Context, hc *http.Client, url string, body map[string]any) (status int, data []byte, ok bool) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return 0, nil, false
	}
	data, _ = io.ReadAll(res.Body)
	_ = res.Body.Close()
	return res.StatusCode, data, true
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func jitter(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return max(lo, 0)
	}
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

func (w *workload) client(ctx context.Context, id int, r *rand.Rand) {
	for i := 0; i < maxIterations && ctx.Err() == nil; i++ {
		res := w.resources[r.IntN(len(w.resources))]
		owner := fmt.Sprintf("c%d-%d", id, i)
		ttl := int64(1000 + 1000*r.IntN(2))
		var waitMs int64
		if r.IntN(3) == 0 {
			waitMs = 300 + r.Int64N(maxWaitMs-300)
		}
		a := w.call(ctx, id, op{Kind: kindAcquire, Resource: res, Owner: owner, TTLms: ttl, WaitMs: waitMs})
		if a.Outcome == outUnknown && ctx.Err() == nil {
			// Retrying with the same owner is safe (idempotent).
			pause(ctx, jitter(r, 200*time.Millisecond, 500*time.Millisecond))
			a = w.call(ctx, id, op{Kind: kindAcquire, Resource: res, Owner: owner, TTLms: ttl})
		}
		if a.Outcome != outGranted {
			pause(ctx, jitter(r, 20*time.Millisecond, 200*time.Millisecond))
			continue
		}
		token := a.Token
		deadline := a.Call + ttl*int64(time.Millisecond) - beliefMargin
		lost := false
		for j := 0; j < 1+r.IntN(4) && !lost && ctx.Err() == nil; j++ {
			// Work, then write the result with the token.
			pause(ctx, jitter(r, 20*time.Millisecond, 250*time.Millisecond))
			if attempted, _ := w.store.put(res, owner, token, deadline); !attempted {
				break // the holder no longer believes it holds the lease
			}
			if r.IntN(3) == 0 {
				n := w.call(ctx, id, op{Kind: kindRenew, Resource: res, Owner: owner, ReqToken: token, TTLms: ttl})
				switch n.Outcome {
				case outOK:
					deadline = n.Call + ttl*int64(time.Millisecond) - beliefMargin
				case outNotFound, outForbidden, outGranted:
					// outGranted: an election's renewing campaign that
					// got a new term; the term this holder wrote under
					// has ended.
					lost = true
				}
			}
		}
		if r.IntN(8) != 0 { // else let it expire
			w.call(ctx, id, op{Kind: kindRelease, Resource: res, Owner: owner, ReqToken: token})
		}
	}
}

type lockJSON struct {
	Owner      string    `json:"owner"`
	Token      int64     `json:"token"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// call makes one request and records it; a request that provably never
// reached a gateway (the dial failed) is counted, not recorded.
func (w *workload) call(ctx context.Context, client int, o op) op {
	o.Client = client
	var req *http.Request
	var err error
	path := w.base + "/locks/" + url.PathEscape(o.Resource)
	// The request outlives ctx by design: once sent it is not cancelled,
	// so an answer is not turned into an unknown outcome at the end of
	// the run. The client timeout bounds it.
	rctx := context.WithoutCancel(ctx)
	switch {
	case w.elections:
		req, err = w.electionRequest(rctx, o)
	case o.Kind == kindAcquire:
		body, _ := json.Marshal(map[string]any{"owner": o.Owner, "ttl_seconds": o.TTLms / 1000, "wait_ms": o.WaitMs})
		req, err = http.NewRequestWithContext(rctx, http.MethodPost, path, bytes.NewReader(body))
	case o.Kind == kindRenew:
		body, _ := json.Marshal(map[string]any{"owner": o.Owner, "ttl_seconds": o.TTLms / 1000, "token": o.ReqToken})
		req, err = http.NewRequestWithContext(rctx, http.MethodPost, path+"/renew", bytes.NewReader(body))
	case o.Kind == kindRelease:
		q := url.Values{"owner": {o.Owner}, "token": {strconv.FormatInt(o.ReqToken, 10)}}
		req, err = http.NewRequestWithContext(rctx, http.MethodDelete, path+"?"+q.Encode(), nil)
	}
	if err != nil {
		w.h.unexpect(err.Error())
		return o
	}
	req.Header.Set("Content-Type", "application/json")
	if o.WaitMs > 0 {
		w.waiting.Add(1)
		defer w.waiting.Add(-1)
	}
	o.Call = w.h.clock()
	resp, err := w.http.Do(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	o.Return = w.h.clock()
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			w.h.refuse()
			o.Outcome = outUnknown
			return o
		}
		o.Outcome, o.Err = outUnknown, err.Error()
		w.h.add(o)
		return o
	}
	o.Status = resp.StatusCode
	if w.elections {
		o = w.decodeElection(o, resp.StatusCode, body)
		w.h.add(o)
		return o
	}
	o.Outcome, o.RetryAfterMs = w.decode(o, resp.StatusCode, body)
	if o.Outcome == outGranted || (o.Kind == kindRenew && o.Outcome == outOK) {
		var a struct {
			Lock lockJSON `json:"lock"`
		}
		_ = json.Unmarshal(body, &a)
		l := a.Lock
		if l.Token == 0 || l.Owner != o.Owner {
			w.h.unexpect(fmt.Sprintf("%s %d: %s", o.Kind, resp.StatusCode, body))
			o.Outcome = outUnknown
		}
		o.Token, o.AcquiredAt, o.ExpiresAt = l.Token, l.AcquiredAt.UnixMilli(), l.ExpiresAt.UnixMilli()
	}
	w.h.add(o)
	return o
}

// decode maps an answer to an outcome (and, for not-granted, the
// holder's remaining time).
func (w *workload) decode(o op, status int, body []byte) (outcome, int64) {
	switch {
	case status >= 500:
		return outUnknown, 0
	case status == http.StatusNotFound && o.Kind != kindAcquire:
		return outNotFound, 0
	case status == http.StatusForbidden && o.Kind != kindAcquire:
		return outForbidden, 0
	case status == http.StatusNoContent && o.Kind == kindRelease:
		return outOK, 0
	case status == http.StatusOK && o.Kind == kindRenew:
		return outOK, 0
	case status == http.StatusOK && o.Kind == kindAcquire:
		var a struct {
			Acquired     *bool `json:"acquired"`
			RetryAfterMs int64 `json:"retry_after_ms"`
		}
		if err := json.Unmarshal(body, &a); err != nil || a.Acquired == nil {
			break
		}
		if *a.Acquired {
			return outGranted, 0
		}
		return outNotGranted, a.RetryAfterMs
	}
	w.h.unexpect(fmt.Sprintf("%s: %d %s", o.Kind, status, body))
	return outUnknown, 0
}

// electionRequest is o on the election routes: an acquire is a campaign,
// a renew a campaign of the sitting leader (which must keep its term), a
// release a resignation under the term.
func (w *workload) electionRequest(ctx context.Context, o op) (*http.Request, error) {
	path := w.base + "/elections/" + url.PathEscape(o.Resource)
	switch o.Kind {
	case kindAcquire, kindRenew:
		body, _ := json.Marshal(map[string]any{"candidate": o.Owner, "value": o.Owner, "ttl_seconds": o.TTLms / 1000, "wait_ms": o.WaitMs})
		return http.NewRequestWithContext(ctx, http.MethodPost, path+"/campaign", bytes.NewReader(body))
	default:
		body, _ := json.Marshal(map[string]any{"candidate": o.Owner, "term": o.ReqToken})
		return http.NewRequestWithContext(ctx, http.MethodDelete, path, bytes.NewReader(body))
	}
}

type leaderJSON struct {
	Candidate string    `json:"candidate"`
	Value     string    `json:"value"`
	Term      int64     `json:"term"`
	ElectedAt time.Time `json:"elected_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// decodeElection maps an election answer to the lock outcomes of the
// model. A renewing campaign answered with another term is recorded as
// the acquire it was (a new term for the same candidate): the workload's
// holder then stops, its term having ended.
func (w *workload) decodeElection(o op, status int, body []byte) op {
	switch {
	case status >= 500:
		o.Outcome = outUnknown
		return o
	case o.Kind == kindRelease && status == http.StatusNoContent:
		o.Outcome = outOK
		return o
	case o.Kind == kindRelease && status == http.StatusNotFound:
		o.Outcome = outNotHeld
		return o
	case o.Kind != kindRelease && status == http.StatusOK:
		var a struct {
			Leader       *bool       `json:"leader"`
			Leadership   leaderJSON  `json:"leadership"`
			Current      *leaderJSON `json:"current"`
			RetryAfterMs int64       `json:"retry_after_ms"`
		}
		if err := json.Unmarshal(body, &a); err != nil || a.Leader == nil {
			break
		}
		if !*a.Leader {
			switch {
			case o.Kind == kindAcquire:
				o.Outcome, o.RetryAfterMs = outNotGranted, a.RetryAfterMs
			case a.Current != nil:
				o.Outcome = outForbidden
			default:
				o.Outcome = outNotFound
			}
			return o
		}
		l := a.Leadership
		if l.Term == 0 || l.Candidate != o.Owner || l.Value != o.Owner {
			break
		}
		o.Token, o.AcquiredAt, o.ExpiresAt = l.Term, l.ElectedAt.UnixMilli(), l.ExpiresAt.UnixMilli()
		switch {
		case o.Kind == kindAcquire:
			o.Outcome = outGranted
		case l.Term == o.ReqToken:
			o.Outcome = outOK
		default:
			o.Kind, o.Outcome = kindAcquire, outGranted
		}
		return o
	}
	w.h.unexpect(fmt.Sprintf("election %s: %d %s", o.Kind, status, body))
	o.Outcome = outUnknown
	return o
}
