package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeElections is an in-memory election service speaking the gateway's
// election API (campaign, resign), for the election checkers' controls.
// Correct, it is a leased leadership with a term above every earlier one;
// with reuseTerm on, a new leader gets the term of the one before it (a
// script that reuses a term), the broken build the checkers must catch.
type fakeElections struct {
	reuseTerm bool

	mu     sync.Mutex
	leases map[string]fakeLease
	fence  map[string]int64
}

func (f *fakeElections) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/elections/")
	name := strings.TrimSuffix(path, "/campaign")
	var body struct {
		Candidate string `json:"candidate"`
		Value     string `json:"value"`
		TTL       int64  `json:"ttl_seconds"`
		Term      int64  `json:"term"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	nowMs := now.UnixMilli()
	cur, held := f.leases[name]
	live := held && cur.exp > nowMs
	switch {
	case r.Method == http.MethodPost:
		if live && cur.owner != body.Candidate {
			l := leaderBody(name, cur)
			writeJSON(w, http.StatusOK, map[string]any{"leader": false, "current": l, "retry_after_ms": cur.exp - nowMs})
			return
		}
		if live {
			cur.exp = nowMs + body.TTL*1000
		} else {
			term := max(f.fence[name]+1, now.UnixMicro())
			if f.reuseTerm && f.fence[name] != 0 {
				term = f.fence[name]
			}
			f.fence[name] = term
			cur = fakeLease{owner: body.Candidate, token: term, acquired: nowMs, exp: nowMs + body.TTL*1000}
		}
		f.leases[name] = cur
		writeJSON(w, http.StatusOK, map[string]any{"leader": true, "leadership": leaderBody(name, cur)})
	case !live || cur.owner != body.Candidate || body.Term != cur.token:
		w.WriteHeader(http.StatusNotFound)
	default:
		delete(f.leases, name)
		w.WriteHeader(http.StatusNoContent)
	}
}

func leaderBody(name string, l fakeLease) map[string]any {
	const layout = "2006-01-02T15:04:05.000Z"
	return map[string]any{
		"name": name, "candidate": l.owner, "value": l.owner, "term": l.token,
		"elected_at": time.UnixMilli(l.acquired).UTC().Format(layout),
		"expires_at": time.UnixMilli(l.exp).UTC().Format(layout),
	}
}

func runFakeElections(t *testing.T, f *fakeElections, d time.Duration) verdict {
	t.Helper()
	f.leases, f.fence = map[string]fakeLease{}, map[string]int64{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	w := newElectionWorkload(srv.URL, "control", 4, 16)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w.run(ctx, uint64(time.Now().UnixNano()))()
	v, notes, _ := check(w.h, 10*time.Second, false)
	t.Logf("%+v", v)
	for _, n := range notes {
		t.Log(n)
	}
	w.h.mu.Lock()
	unexpected := w.h.unexpected
	w.h.mu.Unlock()
	if len(unexpected) > 0 {
		t.Errorf("answers the election workload does not expect: %q", unexpected)
	}
	if v.Grants == 0 {
		t.Fatalf("no campaign was elected: the workload did not run")
	}
	return v
}

// TestCheckersCatchABrokenElection is the negative control of the
// election model: the election workload and the checkers, run against an
// in-memory election service whose new leaders reuse the previous term,
// must report violations (the model and the term checker); against a
// correct one, none.
func TestCheckersCatchABrokenElection(t *testing.T) {
	t.Parallel()
	t.Run("a correct election has no violations", func(t *testing.T) {
		t.Parallel()
		v := runFakeElections(t, &fakeElections{}, 3*time.Second)
		if v.violations() != 0 {
			t.Errorf("got %d violations, want 0: %+v", v.violations(), v)
		}
	})
	t.Run("an election that reuses a term is caught", func(t *testing.T) {
		t.Parallel()
		v := runFakeElections(t, &fakeElections{reuseTerm: true}, 3*time.Second)
		if v.ModelIllegal == 0 {
			t.Errorf("porcupine model: got 0 illegal elections, want > 0")
		}
		if v.TokenRegressions == 0 {
			t.Errorf("term monotonicity: got 0 regressions, want > 0")
		}
	})
}
