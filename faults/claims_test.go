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

// The claim model (docs/safety.md, "Claims"). Beside the other
// workloads, a few clients claim keys of their own (POST
// /claims/{scope}/{key}, TTL 1 s), each attempt under an owner of its
// own; a holder works for a while (sometimes longer than its lease) and
// completes with its owner as the result, or walks away and lets the
// lease run out. Fresh keys come into use every claimKeyEvery, so the
// history holds many whole lives of a claim. Three checks read it:
//
//   - double holders: no two pending claims of one key answered 201 are
//     live at once, over their [claimed_at, expires_at) on the Redis
//     clock (a completion ends a lease early, and after it nothing is
//     pending again, so the whole interval is a safe bound);
//   - ran again: no claim of a key that began after a done answer of
//     that key ended (a completion answered 200, or a claim answered
//     done) is answered 201: once done, the work never runs again;
//   - two results: every done answer of a key carries the same result.
//
// Answers with an unknown outcome (an error, a 503, a timeout) are not
// checked: a claim answered 503 may hold the key, and a completion
// answered 503 may have stored its result, and neither makes a
// violation of definite answers legal.

const (
	claimScope    = "faults-claims"
	claimKeyEvery = time.Second
	claimKeys     = 2 // keys in use at a time
)

// claimOp is one call of the claim workload.
type claimOp struct {
	Key      string  `json:"key"`
	Owner    string  `json:"owner"`
	Complete bool    `json:"complete,omitempty"`
	Outcome  outcome `json:"outcome"`
	// Done: the answer was the done state (a claim answered done, or a
	// completion answered 200), with Result.
	Done   bool   `json:"done,omitempty"`
	Result string `json:"result,omitempty"`
	// Start and End bound the call in ns since the workload began.
	Start int64 `json:"start"`
	End   int64 `json:"end"`
	// From and Until are a granted claim's claimed_at and expires_at, in
	// Redis-clock ms; Token its token.
	From  int64 `json:"from,omitempty"`
	Until int64 `json:"until,omitempty"`
	Token int64 `json:"token,omitempty"`
}

// claimWorkload runs the claim clients on keys of their own.
type claimWorkload struct {
	base     string
	scenario string
	clients  int
	http     *http.Client
	began    time.Time
	ledger[claimOp]
}

func newClaimWorkload(base, scenario string, clients int) *claimWorkload {
	return &claimWorkload{base: base, scenario: scenario, clients: clients, http: keepAlive(clients)}
}

func (w *claimWorkload) run(ctx context.Context, seed uint64) (wait func()) {
	w.began = time.Now()
	return runClients(ctx, w.clients, seed, 3000, w.http, w.client)
}

func (w *claimWorkload) client(ctx context.Context, id int, r *rand.Rand) {
	for i := 0; i < maxIterations && ctx.Err() == nil; i++ {
		gen := time.Since(w.began) / claimKeyEvery
		key := fmt.Sprintf("%s:g%d:%d", w.scenario, gen, r.IntN(claimKeys))
		owner := fmt.Sprintf("q%d-%d", id, i)
		c := w.call(ctx, key, owner, false, map[string]any{"owner": owner, "ttl_seconds": 1})
		w.add(c)
		if c.Outcome == outGranted && !c.Done && r.IntN(3) > 0 {
			// Work, now and then past the lease, and complete.
			work := jitter(r, 0, 300*time.Millisecond)
			if r.IntN(5) == 0 {
				work = jitter(r, 900*time.Millisecond, 1300*time.Millisecond)
			}
			pause(ctx, work)
			w.add(w.call(ctx, key, owner, true, map[string]any{"owner": owner, "token": c.Token, "result": owner, "keep_seconds": 60}))
		}
		pause(ctx, jitter(r, 20*time.Millisecond, 150*time.Millisecond))
	}
}

// call sends one claim (or, with complete, one completion) and records
// its answer.
func (w *claimWorkload) call(ctx context.Context, key, owner string, complete bool, body map[string]any) (o claimOp) {
	o = claimOp{Key: key, Owner: owner, Complete: complete, Outcome: outUnknown, Start: int64(time.Since(w.began))}
	defer func() { o.End = int64(time.Since(w.began)) }()
	path := w.base + "/claims/" + claimScope + "/" + url.PathEscape(key)
	if complete {
		path += "/complete"
	}
	status, data, ok := postJSON(ctx, w.http, path, body)
	if !ok {
		return o
	}
	what := "POST /claims"
	if complete {
		what += "/complete"
	}
	switch {
	case status == http.StatusServiceUnavailable:
		return o
	case !complete && status == http.StatusConflict,
		complete && (status == http.StatusForbidden || status == http.StatusNotFound):
		o.Outcome = outNotGranted
		return o
	case status == http.StatusOK || (!complete && status == http.StatusCreated):
	default:
		w.unexpected(fmt.Sprintf("%s: %d %s", what, status, data))
		return o
	}
	var ans struct {
		State  string          `json:"state"`
		Result json.RawMessage `json:"result"`
		Token  int64           `json:"token"`
		Claim  struct {
			Owner     string `json:"owner"`
			Token     int64  `json:"token"`
			ClaimedAt string `json:"claimed_at"`
			ExpiresAt string `json:"expires_at"`
		} `json:"claim"`
	}
	if err := json.Unmarshal(data, &ans); err != nil {
		w.unexpected(what + ": " + string(data))
		return o
	}
	switch {
	case ans.State == "done":
		var result string
		if json.Unmarshal(ans.Result, &result) != nil || ans.Token <= 0 {
			w.unexpected(what + ": " + string(data))
			return o
		}
		o.Outcome, o.Done, o.Result, o.Token = outGranted, true, result, ans.Token
	case ans.State == "pending" && status == http.StatusCreated:
		from, err1 := time.Parse(time.RFC3339Nano, ans.Claim.ClaimedAt)
		until, err2 := time.Parse(time.RFC3339Nano, ans.Claim.ExpiresAt)
		if err1 != nil || err2 != nil || ans.Claim.Owner != owner || ans.Claim.Token <= 0 {
			w.unexpected(what + ": " + string(data))
			return o
		}
		o.Outcome, o.From, o.Until, o.Token = outGranted, from.UnixMilli(), until.UnixMilli(), ans.Claim.Token
	default:
		// 200 pending is the same owner claiming again, which a fresh
		// owner never does.
		w.unexpected(fmt.Sprintf("%s: %d %s", what, status, data))
	}
	return o
}

// claimVerdict is the claim checkers' count.
type claimVerdict struct {
	Ops       int `json:"claim_ops"`
	Started   int `json:"claims_started"`
	Completed int `json:"claims_completed"`
	Replayed  int `json:"claims_answered_done"`
	Refused   int `json:"claims_refused"`
	Unknown   int `json:"claims_unknown_outcome"`
	// DoubleHolders: claims answered 201 whose leases overlapped another
	// owner's on the same key.
	DoubleHolders int `json:"claim_double_holders"`
	// RanAgain: claims answered 201 that began after a done answer of
	// the same key had ended.
	RanAgain int `json:"claim_ran_again"`
	// TwoResults: done answers whose result differs from the key's first.
	TwoResults int `json:"claim_two_results"`
}

func (v claimVerdict) violations() int { return v.DoubleHolders + v.RanAgain + v.TwoResults }

// checkClaims counts the answers and the violations.
func checkClaims(ops []claimOp) (claimVerdict, []string) {
	var v claimVerdict
	var notes []string
	note := func(format string, args ...any) {
		if len(notes) < 10 {
			notes = append(notes, fmt.Sprintf(format, args...))
		}
	}
	byKey := map[string][]claimOp{}
	for _, o := range ops {
		v.Ops++
		switch {
		case o.Outcome == outUnknown:
			v.Unknown++
		case o.Outcome == outNotGranted:
			v.Refused++
		case o.Done && o.Complete:
			v.Completed++
		case o.Done:
			v.Replayed++
		default:
			v.Started++
		}
		byKey[o.Key] = append(byKey[o.Key], o)
	}
	for key, ops := range byKey {
		var held []claimOp
		var firstDone *claimOp
		for i, o := range ops {
			if o.Outcome != outGranted {
				continue
			}
			if !o.Done {
				held = append(held, o)
				continue
			}
			if firstDone == nil || o.End < firstDone.End {
				firstDone = &ops[i]
			}
		}
		slices.SortFunc(held, func(a, b claimOp) int { return cmp.Compare(a.From, b.From) })
		// A lease ending at t is over for a claim at t.
		var until int64
		var holder string
		for _, o := range held {
			if o.From < until && o.Owner != holder {
				v.DoubleHolders++
				note("double holders of %s: %s's claim from %d while %s's ran until %d", key, o.Owner, o.From, holder, until)
			}
			if o.Until > until {
				until, holder = o.Until, o.Owner
			}
			if firstDone != nil && o.Start > firstDone.End {
				v.RanAgain++
				note("ran again: %s claimed %s at %d ns, after %s's done answer (%q) ended at %d ns", o.Owner, key, o.Start, firstDone.Owner, firstDone.Result, firstDone.End)
			}
		}
		for _, o := range ops {
			if o.Outcome == outGranted && o.Done && o.Result != firstDone.Result {
				v.TwoResults++
				note("two results of %s: %q answered to %s, %q to %s", key, firstDone.Result, firstDone.Owner, o.Result, o.Owner)
			}
		}
	}
	return v, notes
}

// fakeClaims serves the claim routes in process, on the process's
// clock: correct, or broken in one way (noExclusion: every claim is
// started; forgetDone: a completion is answered but not kept).
type fakeClaims struct {
	noExclusion, forgetDone bool

	mu     sync.Mutex
	claims map[string]*fakeClaim
	token  int64
}

type fakeClaim struct {
	owner  string
	token  int64
	until  int64
	done   bool
	result json.RawMessage
}

func (f *fakeClaims) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/claims/"+claimScope+"/")
	key, complete := strings.CutSuffix(key, "/complete")
	var body struct {
		Owner  string          `json:"owner"`
		TTL    int64           `json:"ttl_seconds"`
		Token  int64           `json:"token"`
		Result json.RawMessage `json:"result"`
	}
	if !ok || r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, "not a claim call", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UnixMilli()
	c := f.claims[key]
	stamp := func(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }
	send := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	done := func(c *fakeClaim) {
		send(http.StatusOK, map[string]any{"state": "done", "result": c.result, "completed_at": stamp(now), "token": c.token})
	}
	switch {
	case complete:
		if c == nil || c.done || c.owner != body.Owner || c.token != body.Token || c.until <= now {
			http.Error(w, "not yours", http.StatusForbidden)
			return
		}
		if f.forgetDone {
			delete(f.claims, key)
			done(&fakeClaim{token: c.token, result: body.Result})
			return
		}
		c.done, c.result = true, body.Result
		done(c)
	case c != nil && c.done:
		done(c)
	case c != nil && c.until > now && !f.noExclusion:
		http.Error(w, "in progress", http.StatusConflict)
	default:
		f.token++
		c = &fakeClaim{owner: body.Owner, token: f.token, until: now + body.TTL*1000}
		f.claims[key] = c
		send(http.StatusCreated, map[string]any{"state": "pending", "claim": map[string]any{
			"scope": claimScope, "key": key, "owner": c.owner, "token": c.token, "claimed_at": stamp(now), "expires_at": stamp(c.until)}})
	}
}

// TestCheckersCatchBrokenClaims is the claims' negative control: a
// service that starts every claim must be caught with double holders, one
// that forgets a completion with work run again, and a correct fake must
// show no violation.
func TestCheckersCatchBrokenClaims(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, f *fakeClaims) claimVerdict {
		f.claims = map[string]*fakeClaim{}
		ops := runControl(t, f, 5*time.Second, func(base string) sideWorkload[claimOp] { return newClaimWorkload(base, "control", 4) })
		v, notes := checkClaims(ops)
		t.Logf("%+v %q", v, notes)
		if v.Started == 0 || v.Completed == 0 || (v.Refused == 0 && !f.noExclusion) || (v.Replayed == 0 && !f.forgetDone) {
			t.Fatalf("the claim workload did not contend: %+v", v)
		}
		return v
	}
	t.Run("a correct claim service has no violations", func(t *testing.T) {
		t.Parallel()
		if v := run(t, &fakeClaims{}); v.violations() != 0 {
			t.Errorf("got %d violations, want 0: %+v", v.violations(), v)
		}
	})
	t.Run("a service that starts every claim is caught with double holders", func(t *testing.T) {
		t.Parallel()
		if v := run(t, &fakeClaims{noExclusion: true}); v.DoubleHolders == 0 {
			t.Errorf("double holders: got 0, want > 0: %+v", v)
		}
	})
	t.Run("a service that forgets completions is caught running work again", func(t *testing.T) {
		t.Parallel()
		// A claim counts as run again only when it was sent after a done
		// answer had come back; one sent while the completion was on its
		// way is not (nothing had told anyone the work was done), and is
		// counted as a double holder instead. A round on a loaded machine
		// had only two completions, both met that way (CI, 2026-12-05),
		// so up to three rounds are run.
		for round := 1; ; round++ {
			v := run(t, &fakeClaims{forgetDone: true})
			if v.RanAgain > 0 {
				return
			}
			if round == 3 {
				t.Fatalf("ran again: got 0 in %d rounds, want > 0: %+v", round, v)
			}
			t.Logf("round %d: no claim was sent after a done answer; running another", round)
		}
	})
}
