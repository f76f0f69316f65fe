package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLocks is an in-memory lock service speaking the gateway's lock API
// (acquire, renew, release), for the checkers' controls. Correct, it is
// a plain leased lock with fencing tokens; with its flaws switched on it
// is the broken build the checkers must catch.
type fakeLocks struct {
	// skipOwnerCheck grants every acquire, held or not.
	skipOwnerCheck bool
	// forgetEvery, when above 0, forgets the fence every so many grants
	// and restarts tokens at 1, as a store that lost its state and has
	// no clock floor would.
	forgetEvery int
	// setOneByOne grants a lock set's members one at a time and stops at
	// the first held one without giving back those it took: the broken
	// set script (not all or none).
	setOneByOne bool
	// setSkipCheck grants a lock set without looking at its members.
	setSkipCheck bool

	mu     sync.Mutex
	leases map[string]fakeLease
	fence  map[string]int64
	grants int
}

type fakeLease struct {
	owner                string
	token, acquired, exp int64
}

func (f *fakeLocks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/locks" && r.Method == http.MethodPost {
		f.acquireSet(w, r)
		return
	}
	if r.Method == http.MethodGet {
		f.status(w, strings.TrimPrefix(r.URL.Path, "/locks/"))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/locks/")
	renew := strings.HasSuffix(path, "/renew")
	res := strings.TrimSuffix(path, "/renew")
	var body struct {
		Owner string `json:"owner"`
		TTL   int64  `json:"ttl_seconds"`
		Token int64  `json:"token"`
	}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	} else {
		body.Owner = r.URL.Query().Get("owner")
		body.Token, _ = strconv.ParseInt(r.URL.Query().Get("token"), 10, 64)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	nowMs := now.UnixMilli()
	cur, held := f.leases[res]
	live := held && cur.exp > nowMs
	switch {
	case r.Method == http.MethodPost && !renew:
		if live && cur.owner != body.Owner && !f.skipOwnerCheck {
			writeJSON(w, http.StatusOK, map[string]any{"acquired": false, "resource": res, "retry_after_ms": cur.exp - nowMs})
			return
		}
		if live && cur.owner == body.Owner {
			cur.exp = nowMs + body.TTL*1000
		} else {
			f.grants++
			token := max(f.fence[res]+1, now.UnixMicro())
			if f.forgetEvery > 0 {
				// The broken build: a plain counter, forgotten now and then.
				if f.grants%f.forgetEvery == 0 {
					f.fence[res] = 0
				}
				token = f.fence[res] + 1
			}
			f.fence[res] = token
			cur = fakeLease{owner: body.Owner, token: token, acquired: nowMs, exp: nowMs + body.TTL*1000}
		}
		f.leases[res] = cur
		writeJSON(w, http.StatusOK, map[string]any{"acquired": true, "lock": lockBody(res, cur)})
	case !live:
		w.WriteHeader(http.StatusNotFound)
	case cur.owner != body.Owner || (body.Token != 0 && body.Token != cur.token):
		w.WriteHeader(http.StatusForbidden)
	case renew:
		cur.exp = nowMs + body.TTL*1000
		f.leases[res] = cur
		writeJSON(w, http.StatusOK, map[string]any{"lock": lockBody(res, cur)})
	default:
		delete(f.leases, res)
		w.WriteHeader(http.StatusNoContent)
	}
}

// status answers GET /locks/{resource}.
func (f *fakeLocks) status(w http.ResponseWriter, res string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.leases[res]
	if !ok || cur.exp <= time.Now().UnixMilli() {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"lock": lockBody(res, cur)})
}

// acquireSet answers POST /locks: all or none, unless setOneByOne.
func (f *fakeLocks) acquireSet(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Resources []string `json:"resources"`
		Owner     string   `json:"owner"`
		TTL       int64    `json:"ttl_seconds"`
		WaitMs    int64    `json:"wait_ms"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	nowMs := now.UnixMilli()
	var held []map[string]any
	grant := func(res string) fakeLease {
		token := max(f.fence[res]+1, now.UnixMicro())
		f.fence[res] = token
		l := fakeLease{owner: body.Owner, token: token, acquired: nowMs, exp: nowMs + body.TTL*1000}
		f.leases[res] = l
		return l
	}
	for _, res := range body.Resources {
		cur, ok := f.leases[res]
		if ok && cur.exp > nowMs && cur.owner != body.Owner && !f.setSkipCheck {
			held = append(held, map[string]any{"resource": res, "retry_after_ms": cur.exp - nowMs})
			if f.setOneByOne {
				break
			}
			continue
		}
		if f.setOneByOne {
			grant(res)
		}
	}
	if len(held) > 0 {
		writeJSON(w, http.StatusOK, map[string]any{"acquired": false, "held": held})
		return
	}
	locks := make([]map[string]any, 0, len(body.Resources))
	for _, res := range body.Resources {
		l, ok := f.leases[res]
		if !ok || l.owner != body.Owner || l.exp <= nowMs || !f.setOneByOne {
			l = grant(res)
		}
		locks = append(locks, lockBody(res, l))
	}
	writeJSON(w, http.StatusOK, map[string]any{"acquired": true, "locks": locks})
}

func lockBody(res string, l fakeLease) map[string]any {
	const layout = "2006-01-02T15:04:05.000Z"
	return map[string]any{
		"resource": res, "owner": l.owner, "token": l.token,
		"acquired_at": time.UnixMilli(l.acquired).UTC().Format(layout),
		"expires_at":  time.UnixMilli(l.exp).UTC().Format(layout),
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// runFake drives the usual workload against a fake for d and checks it.
func runFake(t *testing.T, f *fakeLocks, d time.Duration) verdict {
	t.Helper()
	f.leases, f.fence = map[string]fakeLease{}, map[string]int64{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	w := newWorkload(srv.URL, "control", 4, 16)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	w.run(ctx, uint64(time.Now().UnixNano()))()
	v, notes, _ := check(w.h, 10*time.Second, false)
	t.Logf("%+v", v)
	for _, n := range notes {
		t.Log(n)
	}
	if v.Grants == 0 {
		t.Fatalf("no acquire was granted: the workload did not run")
	}
	return v
}

// TestCheckersCatchABrokenLock is the negative control: the same
// workload and checkers, run against a lock service that grants every
// acquire and forgets its fencing tokens, must report violations, each
// checker its own; and run against a correct in-memory lock they must
// report none.
func TestCheckersCatchABrokenLock(t *testing.T) {
	t.Parallel()
	t.Run("a correct lock has no violations", func(t *testing.T) {
		t.Parallel()
		v := runFake(t, &fakeLocks{}, 3*time.Second)
		if v.violations() != 0 {
			t.Errorf("got %d violations, want 0: %+v", v.violations(), v)
		}
	})
	t.Run("a lock without the owner check and with forgotten tokens is caught by every checker", func(t *testing.T) {
		t.Parallel()
		v := runFake(t, &fakeLocks{skipOwnerCheck: true, forgetEvery: 25}, 3*time.Second)
		if v.ModelIllegal == 0 {
			t.Errorf("porcupine model: got 0 illegal resources, want > 0")
		}
		if v.DoubleGrants == 0 {
			t.Errorf("double grants: got 0, want > 0")
		}
		if v.StaleAccepted+v.SupersededAccepted == 0 {
			t.Errorf("fencing checker: got 0 stale or superseded writes accepted, want > 0")
		}
		if v.TokenRegressions == 0 {
			t.Errorf("token monotonicity: got 0 regressions, want > 0")
		}
	})
}

// runFakeSets drives the set workload against a fake for d and checks
// it.
func runFakeSets(t *testing.T, f *fakeLocks, d time.Duration) setVerdict {
	t.Helper()
	f.leases, f.fence = map[string]fakeLease{}, map[string]int64{}
	ops := runControl(t, f, d, func(base string) sideWorkload[setOp] { return newSetWorkload(base, "control", 5, 4) })
	v, notes := checkSets(ops)
	t.Logf("%+v", v)
	for _, n := range notes {
		t.Log(n)
	}
	if v.Grants == 0 || (v.Refused == 0 && !f.setSkipCheck) {
		t.Fatalf("granted %d, refused %d: the set workload did not contend", v.Grants, v.Refused)
	}
	return v
}

// TestCheckersCatchABrokenLockSet is the lock-set half of the negative
// control: a set service that grants members one at a time and keeps
// them when a later member is held must be caught (partial holds), and
// a correct all-or-none fake must show no violation.
func TestCheckersCatchABrokenLockSet(t *testing.T) {
	t.Parallel()
	t.Run("a correct lock set has no violations", func(t *testing.T) {
		t.Parallel()
		if v := runFakeSets(t, &fakeLocks{}, 3*time.Second); v.violations() != 0 {
			t.Errorf("got %d violations, want 0: %+v", v.violations(), v)
		}
	})
	t.Run("a set granted member by member without rollback is caught", func(t *testing.T) {
		t.Parallel()
		if v := runFakeSets(t, &fakeLocks{setOneByOne: true}, 3*time.Second); v.PartialHolds == 0 {
			t.Errorf("partial holds: got 0, want > 0: %+v", v)
		}
	})
	t.Run("a set granted without checking its members is caught", func(t *testing.T) {
		t.Parallel()
		if v := runFakeSets(t, &fakeLocks{setSkipCheck: true}, 2*time.Second); v.Overlaps == 0 {
			t.Errorf("overlaps: got 0, want > 0: %+v", v)
		}
	})
}
