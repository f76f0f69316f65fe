package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// The lock-set model (docs/safety.md, "Lock sets"). Beside the lock
// workload, a few clients take sets of 2..3 of their own resources
// (POST /locks), each attempt under an owner of its own, and let the
// leases run out (TTL 1 s) instead of releasing them, so every granted
// member's lease is exactly [acquired_at, expires_at) on the Redis clock
// the answer reports. Two checks read the history:
//
//   - overlap: no two owners hold a common member at once: the Redis-clock
//     intervals of two granted sets' leases on one resource never
//     overlap;
//   - partial hold: after an answer "not acquired", the owner holds none
//     of the set: each member is read back (GET /locks/{r}) at once, and
//     none may show the refused owner (an owner is used for one attempt
//     only, so no earlier grant of its own can explain it).
//
// An answer with an unknown outcome (an error, a 503, a timeout) is
// neither checked nor counted as a grant.

// setOp is one POST /locks of the set workload.
type setOp struct {
	Owner     string     `json:"owner"`
	Resources []string   `json:"resources"`
	Outcome   outcome    `json:"outcome"`
	Leases    []setLease `json:"leases,omitempty"`
	// Probed are the members read back after a refusal, and Holders who
	// held each ("" none, "?" the read failed).
	Holders []string `json:"holders,omitempty"`
}

// setLease is one member's lease of a granted set, in Redis-clock ms.
type setLease struct {
	Resource string `json:"resource"`
	Token    int64  `json:"token"`
	From     int64  `json:"from"`
	Until    int64  `json:"until"`
}

// setWorkload runs the set clients on resources of their own.
type setWorkload struct {
	base      string
	resources []string
	clients   int
	http      *http.Client
	ledger[setOp]
}

func newSetWorkload(base, scenario string, resources, clients int) *setWorkload {
	w := &setWorkload{base: base, clients: clients, http: keepAlive(clients)}
	for i := range resources {
		w.resources = append(w.resources, fmt.Sprintf("%s/set%d", scenario, i))
	}
	return w
}

func (w *setWorkload) run(ctx context.Context, seed uint64) (wait func()) {
	return runClients(ctx, w.clients, seed, 1000, w.http, w.client)
}

func (w *setWorkload) client(ctx context.Context, id int, r *rand.Rand) {
	for i := 0; i < maxIterations && ctx.Err() == nil; i++ {
		perm := r.Perm(len(w.resources))
		set := make([]string, 2+r.IntN(2))
		for j := range set {
			set[j] = w.resources[perm[j]]
		}
		body := map[string]any{"resources": set, "owner": fmt.Sprintf("s%d-%d", id, i), "ttl_seconds": 1}
		if r.IntN(3) == 0 {
			body["wait_ms"] = 200 + r.IntN(600)
		}
		w.add(w.acquire(ctx, body))
		pause(ctx, jitter(r, 20*time.Millisecond, 150*time.Millisecond))
	}
}

// acquire sends one POST /locks and, after a refusal, reads each member
// back.
func (w *setWorkload) acquire(ctx context.Context, body map[string]any) setOp {
	o := setOp{Owner: body["owner"].(string), Resources: body["resources"].([]string), Outcome: outUnknown}
	status, data, ok := postJSON(ctx, w.http, w.base+"/locks", body)
	if !ok {
		return o
	}
	if status != http.StatusOK {
		if status != http.StatusServiceUnavailable {
			w.unexpected(fmt.Sprintf("POST /locks: %d %s", status, data))
		}
		return o
	}
	var ans struct {
		Acquired bool `json:"acquired"`
		Locks    []struct {
			Resource   string `json:"resource"`
			Owner      string `json:"owner"`
			Token      int64  `json:"token"`
			AcquiredAt string `json:"acquired_at"`
			ExpiresAt  string `json:"expires_at"`
		} `json:"locks"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		w.unexpected("POST /locks: " + string(data))
		return o
	}
	if !ans.Acquired {
		o.Outcome = outNotGranted
		for _, r := range o.Resources {
			o.Holders = append(o.Holders, w.holder(ctx, r))
		}
		return o
	}
	if len(ans.Locks) != len(o.Resources) {
		w.unexpected("POST /locks: " + string(data))
		return o
	}
	o.Outcome = outGranted
	for i, l := range ans.Locks {
		from, err1 := time.Parse(time.RFC3339Nano, l.AcquiredAt)
		until, err2 := time.Parse(time.RFC3339Nano, l.ExpiresAt)
		if err1 != nil || err2 != nil || l.Resource != o.Resources[i] || l.Owner != o.Owner {
			w.unexpected("POST /locks: " + string(data))
			o.Outcome = outUnknown
			return o
		}
		o.Leases = append(o.Leases, setLease{Resource: l.Resource, Token: l.Token, From: from.UnixMilli(), Until: until.UnixMilli()})
	}
	return o
}

// holder reads who holds resource now: "" nobody, "?" unknown.
func (w *setWorkload) holder(ctx context.Context, resource string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.base+"/locks/"+url.PathEscape(resource), nil)
	if err != nil {
		return "?"
	}
	res, err := w.http.Do(req)
	if err != nil {
		return "?"
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusNotFound:
		return ""
	case http.StatusOK:
		var ans struct {
			Lock struct {
				Owner string `json:"owner"`
			} `json:"lock"`
		}
		if json.NewDecoder(res.Body).Decode(&ans) == nil {
			return ans.Lock.Owner
		}
	}
	return "?"
}

// setVerdict is the lock-set checkers' count.
type setVerdict struct {
	Ops     int `json:"set_ops"`
	Grants  int `json:"set_grants"`
	Refused int `json:"set_refused"`
	Unknown int `json:"set_unknown_outcome"`
	// Overlaps: pairs of granted sets of two owners whose leases on a
	// common member overlap on the Redis clock.
	Overlaps int `json:"set_overlaps"`
	// PartialHolds: refused sets whose owner was then found holding a
	// member.
	PartialHolds int `json:"set_partial_holds"`
}

func (v setVerdict) violations() int { return v.Overlaps + v.PartialHolds }

// checkSets runs both checks over the set workload's history.
func checkSets(ops []setOp) (setVerdict, []string) {
	var v setVerdict
	var notes []string
	type held struct {
		owner       string
		from, until int64
	}
	by := map[string][]held{}
	for _, o := range ops {
		v.Ops++
		switch o.Outcome {
		case outGranted:
			v.Grants++
			for _, l := range o.Leases {
				by[l.Resource] = append(by[l.Resource], held{o.Owner, l.From, l.Until})
			}
		case outNotGranted:
			v.Refused++
			for i, h := range o.Holders {
				if h == o.Owner {
					v.PartialHolds++
					if len(notes) < 5 {
						notes = append(notes, fmt.Sprintf("partial hold: %s was refused %v but held %s", o.Owner, o.Resources, o.Resources[i]))
					}
					break
				}
			}
		default:
			v.Unknown++
		}
	}
	for r, hs := range by {
		sort.Slice(hs, func(i, j int) bool { return hs[i].from < hs[j].from })
		for i := 1; i < len(hs); i++ {
			for j := i - 1; j >= 0; j-- {
				if hs[j].owner != hs[i].owner && hs[j].until > hs[i].from {
					v.Overlaps++
					if len(notes) < 10 {
						notes = append(notes, fmt.Sprintf("overlap on %s: %s [%d, %d) and %s [%d, %d)", r, hs[j].owner, hs[j].from, hs[j].until, hs[i].owner, hs[i].from, hs[i].until))
					}
					break
				}
			}
		}
	}
	return v, notes
}
