package faults

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The semaphore model (docs/safety.md, "Semaphores"). Beside the other
// workloads, a few clients take permits of two semaphores of their own
// (POST /semaphores/{name}, limit semLimit), each attempt under an owner
// of its own, and let the permits run out (TTL 1 s) instead of releasing
// them, so every granted permit is live exactly over [acquired_at,
// expires_at) on the Redis clock the answer reports. One check reads the
// history:
//
//   - over limit: at no instant are more than semLimit granted permits
//     of one semaphore live.
//
// An answer with an unknown outcome (an error, a 503, a timeout) is
// neither checked nor counted as a grant: such a permit may be live, so
// the granted ones live at an instant are never more than the real ones.

// semLimit is the limit of every semaphore of the workload.
const semLimit = 2

// semOp is one POST /semaphores/{name} of the semaphore workload.
type semOp struct {
	Name    string  `json:"name"`
	Owner   string  `json:"owner"`
	Outcome outcome `json:"outcome"`
	// From and Until are the granted permit's acquired_at and expires_at,
	// in Redis-clock ms.
	From  int64 `json:"from,omitempty"`
	Until int64 `json:"until,omitempty"`
}

// semWorkload runs the semaphore clients on semaphores of their own.
type semWorkload struct {
	base    string
	names   []string
	clients int
	http    *http.Client
	ledger[semOp]
}

func newSemWorkload(base, scenario string, names, clients int) *semWorkload {
	w := &semWorkload{base: base, clients: clients, http: keepAlive(clients)}
	for i := range names {
		w.names = append(w.names, fmt.Sprintf("%s/sem%d", scenario, i))
	}
	return w
}

func (w *semWorkload) run(ctx context.Context, seed uint64) (wait func()) {
	return runClients(ctx, w.clients, seed, 2000, w.http, w.client)
}

func (w *semWorkload) client(ctx context.Context, id int, r *rand.Rand) {
	for i := 0; i < maxIterations && ctx.Err() == nil; i++ {
		body := map[string]any{"owner": fmt.Sprintf("p%d-%d", id, i), "ttl_seconds": 1, "limit": semLimit}
		if r.IntN(3) == 0 {
			body["wait_ms"] = 200 + r.IntN(600)
		}
		w.add(w.acquire(ctx, w.names[r.IntN(len(w.names))], body))
		pause(ctx, jitter(r, 20*time.Millisecond, 150*time.Millisecond))
	}
}

// acquire sends one POST /semaphores/{name}.
func (w *semWorkload) acquire(ctx context.Context, name string, body map[string]any) semOp {
	o := semOp{Name: name, Owner: body["owner"].(string), Outcome: outUnknown}
	status, data, ok := postJSON(ctx, w.http, w.base+"/semaphores/"+url.PathEscape(name), body)
	if !ok {
		return o
	}
	if status != http.StatusOK {
		if status != http.StatusServiceUnavailable {
			w.unexpected(fmt.Sprintf("POST /semaphores: %d %s", status, data))
		}
		return o
	}
	var ans struct {
		Acquired bool `json:"acquired"`
		Limit    int  `json:"limit"`
		Permit   struct {
			Name       string `json:"name"`
			Owner      string `json:"owner"`
			AcquiredAt string `json:"acquired_at"`
			ExpiresAt  string `json:"expires_at"`
		} `json:"permit"`
	}
	if err := json.Unmarshal(data, &ans); err != nil || ans.Limit != semLimit {
		w.unexpected("POST /semaphores: " + string(data))
		return o
	}
	if !ans.Acquired {
		o.Outcome = outNotGranted
		return o
	}
	p := ans.Permit
	from, err1 := time.Parse(time.RFC3339Nano, p.AcquiredAt)
	until, err2 := time.Parse(time.RFC3339Nano, p.ExpiresAt)
	if err1 != nil || err2 != nil || p.Name != name || p.Owner != o.Owner {
		w.unexpected("POST /semaphores: " + string(data))
		return o
	}
	o.Outcome, o.From, o.Until = outGranted, from.UnixMilli(), until.UnixMilli()
	return o
}

// semVerdict is the semaphore checker's count.
type semVerdict struct {
	Ops     int `json:"sem_ops"`
	Grants  int `json:"sem_grants"`
	Refused int `json:"sem_refused"`
	Unknown int `json:"sem_unknown_outcome"`
	// OverLimit: grants that made more than semLimit granted permits of
	// one semaphore live at once on the Redis clock.
	OverLimit int `json:"sem_over_limit"`
}

func (v semVerdict) violations() int { return v.OverLimit }

// checkSems counts the grants and the moments over the limit.
func checkSems(ops []semOp) (semVerdict, []string) {
	var v semVerdict
	var notes []string
	type edge struct {
		at    int64
		delta int
		owner string
	}
	by := map[string][]edge{}
	for _, o := range ops {
		v.Ops++
		switch o.Outcome {
		case outGranted:
			v.Grants++
			by[o.Name] = append(by[o.Name], edge{o.From, +1, o.Owner}, edge{o.Until, -1, o.Owner})
		case outNotGranted:
			v.Refused++
		default:
			v.Unknown++
		}
	}
	for name, es := range by {
		// A permit that expires at t is gone for a grant at t: ends
		// first at equal times.
		slices.SortFunc(es, func(a, b edge) int {
			return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta))
		})
		live := 0
		for _, e := range es {
			live += e.delta
			if e.delta > 0 && live > semLimit {
				v.OverLimit++
				if len(notes) < 10 {
					notes = append(notes, fmt.Sprintf("over limit on %s: %s's permit from %d made %d live, limit %d", name, e.owner, e.at, live, semLimit))
				}
			}
		}
	}
	return v, notes
}

// fakeSemaphores serves POST /semaphores/{name} in process, on the
// process's clock: correct, or (skipLimit) granting every acquire.
type fakeSemaphores struct {
	skipLimit bool

	mu      sync.Mutex
	permits map[string][]int64 // the expiries of each name's live permits, in ms
}

func (f *fakeSemaphores) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, "/semaphores/")
	var body struct {
		Owner string `json:"owner"`
		TTL   int64  `json:"ttl_seconds"`
		Limit int    `json:"limit"`
	}
	if !ok || r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "not a semaphore acquire", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UnixMilli()
	live := slices.DeleteFunc(f.permits[name], func(until int64) bool { return until <= now })
	ans := map[string]any{"acquired": false, "holders": len(live), "limit": body.Limit}
	if len(live) < body.Limit || f.skipLimit {
		until := now + body.TTL*1000
		live = append(live, until)
		stamp := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
		ans = map[string]any{"acquired": true, "holders": len(live), "limit": body.Limit,
			"permit": map[string]any{"name": name, "owner": body.Owner, "token": now, "acquired_at": stamp(now), "expires_at": stamp(until)}}
	} else {
		ans["retry_after_ms"] = slices.Min(live) - now
	}
	f.permits[name] = live
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// TestCheckersCatchABrokenSemaphore is the semaphores' negative
// control: a service that grants permits without counting them must be
// caught over the limit, and a correct fake must show no violation.
func TestCheckersCatchABrokenSemaphore(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, f *fakeSemaphores) semVerdict {
		f.permits = map[string][]int64{}
		ops := runControl(t, f, 3*time.Second, func(base string) sideWorkload[semOp] { return newSemWorkload(base, "control", 2, 4) })
		v, notes := checkSems(ops)
		t.Logf("%+v %q", v, notes)
		if v.Grants == 0 || (v.Refused == 0 && !f.skipLimit) {
			t.Fatalf("granted %d, refused %d: the semaphore workload did not contend", v.Grants, v.Refused)
		}
		return v
	}
	t.Run("a correct semaphore has no violations", func(t *testing.T) {
		t.Parallel()
		if v := run(t, &fakeSemaphores{}); v.violations() != 0 {
			t.Errorf("got %d violations, want 0: %+v", v.violations(), v)
		}
	})
	t.Run("a semaphore that does not count its permits is caught", func(t *testing.T) {
		t.Parallel()
		if v := run(t, &fakeSemaphores{skipLimit: true}); v.OverLimit == 0 {
			t.Errorf("over limit: got 0, want > 0: %+v", v)
		}
	})
}
