package faults

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// leaseState is the model's state of one resource. Times are Unix
// milliseconds of the Redis clock, as the gateway returns them.
//
//   - owner == "": free (no lease, or known to have ended).
//   - expires: the lease is certainly live while the Redis clock is
//     before it (a lower bound of its expiry).
//   - vague: a call of unknown outcome may have set or extended the
//     lease, so it may be live beyond expires; token is 0 when unknown.
//   - clock: a lower bound on the Redis clock at this point of the
//     linearization (the latest decision time seen, or the expiry a 404
//     or a takeover proved to have passed). Decisions never go below it:
//     the Redis clock does not step back (docs/safety.md).
//   - maxToken: the largest token handed to a holder so far.
type leaseState struct {
	owner    string
	token    int64
	expires  int64
	vague    bool
	clock    int64
	maxToken int64
}

// live reports whether the lease may still be live at Redis time now.
func (s leaseState) live(now int64) bool {
	return s.owner != "" && (s.vague || s.expires > now)
}

// certainlyLive reports whether the lease is known to be live at now.
func (s leaseState) certainlyLive(now int64) bool {
	return s.owner != "" && s.expires > now
}

// mayBeHeldBy: in's owner, under in's token where the state knows the
// token, is the holder of s.
func (s leaseState) mayBeHeldBy(in modelInput) bool {
	return s.owner == in.owner && (s.token == 0 || s.token == in.reqToken)
}

// free ends the lease; clock is a Redis time known to have passed.
func (s leaseState) free(clock int64) leaseState {
	return leaseState{clock: max(s.clock, clock), maxToken: s.maxToken}
}

// modelInput and modelOutput are what porcupine sees of an op.
type modelInput struct {
	kind     kind
	owner    string
	reqToken int64
	ttl      int64
	// waited: an acquire with wait_ms > 0.
	waited bool
}

type modelOutput struct {
	outcome outcome
	token   int64
	expires int64
	// now is the Redis decision time of a grant or renewal.
	now int64
}

// leaseModel is the sequential specification of one resource's leased
// lock, nondeterministic because calls with unknown outcome may or may
// not have happened. A step returns every state the call could lead to;
// none means the call's answer is impossible from that state.
var leaseModel = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{leaseState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		s := state.(leaseState)
		in := input.(modelInput)
		out := output.(modelOutput)
		var next []leaseState
		switch in.kind {
		case kindAcquire:
			next = stepAcquire(s, in, out)
		case kindRenew:
			next = stepRenew(s, in, out)
		case kindRelease:
			next = stepRelease(s, in, out)
		}
		res := make([]interface{}, len(next))
		for i, n := range next {
			res[i] = n
		}
		return res
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(modelInput), output.(modelOutput)
		return fmt.Sprintf("%s(%s, tok=%d, ttl=%d) -> %s tok=%d exp=%d now=%d", in.kind, in.owner, in.reqToken, in.ttl, out.outcome, out.token, out.expires, out.now)
	},
	DescribeState: func(state interface{}) string { return fmt.Sprintf("%+v", state.(leaseState)) },
}

func stepAcquire(s leaseState, in modelInput, out modelOutput) []leaseState {
	switch out.outcome {
	case outGranted:
		n := out.now
		if n < s.clock {
			return nil
		}
		granted := leaseState{owner: in.owner, token: out.token, expires: out.expires, clock: n, maxToken: max(s.maxToken, out.token)}
		if s.owner == in.owner && s.live(n) {
			// Same owner: a re-acquire keeps the token; if the lease may
			// have expired, a new token above every earlier one.
			if (s.token != 0 && out.token == s.token) || (!s.certainlyLive(n) || s.token == 0) && out.token > s.maxToken {
				return []leaseState{granted}
			}
			return nil
		}
		if s.certainlyLive(n) {
			// Another owner holds an unexpired lease at the decision
			// time: a double grant.
			return nil
		}
		// A new holder: its token must exceed every earlier one.
		if out.token <= s.maxToken {
			return nil
		}
		return []leaseState{granted}
	case outNotGranted:
		if in.waited {
			// A wait that ran out answers with the last contended reply
			// it had (docs/waiting.md): when Redis stalled, the lease it
			// names may have ended meanwhile. Not being granted is always
			// safe; such an answer observes nothing the model can check.
			// But it is not granted: the gateway lets a try in flight
			// at the end of the wait finish and answers its outcome
			// (docs/waiting.md), so the lease is unchanged.
			return []leaseState{s}
		}
		// Someone else must (maybe) hold a lease at a time >= clock.
		if s.owner == "" || s.owner == in.owner || !s.live(s.clock) {
			return nil
		}
		return []leaseState{s}
	case outUnknown:
		if s.owner == in.owner {
			// A re-acquire may have moved the expiry on, or (if the lease
			// had expired first) made a new lease with a token not known.
			maybe := s
			maybe.vague, maybe.token = true, 0
			return []leaseState{s, maybe}
		}
		// If it was granted, any other lease had expired by then, and the
		// new one lasts at least ttl from a time >= that.
		clock := s.clock
		if s.owner != "" {
			clock = max(clock, s.expires)
		}
		maybe := leaseState{owner: in.owner, expires: clock + in.ttl, vague: true, clock: clock, maxToken: s.maxToken}
		return []leaseState{s, maybe}
	}
	return nil
}

func stepRenew(s leaseState, in modelInput, out modelOutput) []leaseState {
	extended := s
	extended.vague = true
	return stepHolderCall(s, in, out, extended, func() []leaseState {
		n := out.now
		if n < s.clock || !s.mayBeHeldBy(in) || out.token != in.reqToken || !s.live(n) {
			return nil
		}
		return []leaseState{{owner: in.owner, token: out.token, expires: out.expires, clock: n, maxToken: max(s.maxToken, out.token)}}
	})
}

func stepRelease(s leaseState, in modelInput, out modelOutput) []leaseState {
	return stepHolderCall(s, in, out, s.free(0), func() []leaseState {
		if !s.mayBeHeldBy(in) || !s.live(s.clock) {
			return nil
		}
		return []leaseState{s.free(0)}
	})
}

// stepHolderCall steps a call only the holder may make (renew, release):
// ok gives the states a success allows, after is the state a call of
// unknown outcome may have left if in held the lease.
func stepHolderCall(s leaseState, in modelInput, out modelOutput, after leaseState, ok func() []leaseState) []leaseState {
	switch out.outcome {
	case outOK:
		return ok()
	case outNotFound:
		return []leaseState{notFound(s)}
	case outForbidden:
		return forbidden(s, in)
	case outNotHeld:
		// Either of the two above (a resignation's 404 does not say which).
		return append([]leaseState{notFound(s)}, forbidden(s, in)...)
	case outUnknown:
		if s.mayBeHeldBy(in) {
			return []leaseState{s, after}
		}
		return []leaseState{s}
	}
	return nil
}

// notFound: a 404 says there is no live lease, so whatever lease the
// state has must have expired by now: the Redis clock is past the time
// it was certainly live until.
func notFound(s leaseState) leaseState {
	if s.owner == "" {
		return s
	}
	return s.free(s.expires)
}

// forbidden: a 403 says a live lease of another owner, or of this owner
// with another token, exists.
func forbidden(s leaseState, in modelInput) []leaseState {
	if !s.live(s.clock) || (s.owner == in.owner && s.token == in.reqToken) {
		return nil
	}
	return []leaseState{s}
}

// unknownHorizon is how long after its answer a call of unknown outcome
// may still take effect in Redis: the longest a command can sit in a
// stalled Redis's socket buffer or in the proxy, plus the gateway's
// request timeout, with margin. porcupine then treats the call as
// concurrent with everything until then.
const unknownHorizon = int64(15 * time.Second)

// porcupineOps turns one resource's history into porcupine operations.
func porcupineOps(ops []op) []porcupine.Operation {
	var res []porcupine.Operation
	for _, o := range ops {
		ret := o.Return
		if o.Outcome == outUnknown {
			ret += unknownHorizon
		}
		res = append(res, porcupine.Operation{
			ClientId: o.Client,
			Input:    modelInput{kind: o.Kind, owner: o.Owner, reqToken: o.ReqToken, ttl: o.TTLms, waited: o.WaitMs > 0 || o.behindLine},
			Call:     o.Call,
			Output:   modelOutput{outcome: o.Outcome, token: o.Token, expires: o.ExpiresAt, now: o.now()},
			Return:   ret,
		})
	}
	return res
}

// verdict is what the checkers found in one history.
type verdict struct {
	Ops       int `json:"ops"`
	Grants    int `json:"grants"`
	Unknown   int `json:"unknown_outcome"`
	Refused   int `json:"refused_before_sending"`
	Writes    int `json:"writes"`
	Rejected  int `json:"writes_rejected"`
	Resources int `json:"resources"`

	// checker 1: the porcupine model, per resource.
	ModelIllegal int `json:"model_illegal_resources"`
	ModelUnknown int `json:"model_timed_out_resources"`
	// checker 1, diagnosed: histories that are not linearizable as they
	// are, but are once every release answered 204 is taken as possibly
	// undone. Releases are not replicated before the answer (only grants
	// wait for --min-replicas), so a failover can bring a released lease
	// back until its expiry. Grants are still checked in full, so this is
	// not a double grant; it is reported, not counted as a violation.
	ModelLostRelease int `json:"model_lost_release_resources"`
	// checker 1, counted: grants made while another owner's lease was
	// certainly live by the Redis clock (the first one per resource is
	// what makes the model fail).
	DoubleGrants int `json:"double_grants"`
	// checker 2: writes the store accepted from a holder whose token is
	// below one already granted to another owner.
	StaleAccepted int `json:"stale_writes_accepted"`
	// checker 2: writes accepted from a holder after another owner had
	// been granted the resource later than it (whatever the tokens).
	SupersededAccepted int `json:"superseded_writes_accepted"`
	// checker 2: writes of superseded holders the store refused (fencing
	// doing its job).
	SupersededRejected int `json:"superseded_writes_rejected"`
	// checker 3: grants to a new holder whose token is not above every
	// token granted earlier (in real time) on the resource.
	TokenRegressions int `json:"token_regressions"`
}

func (v verdict) violations() int {
	return v.ModelIllegal + v.DoubleGrants + v.StaleAccepted + v.SupersededAccepted + v.TokenRegressions
}

// check runs the three checkers over a history. timeout bounds the
// porcupine search of each resource. failover: Redis failed over during
// the run, so a history the model refuses is checked once more with every
// release answered 204 taken as possibly undone (lost-release); without
// a failover a 204 cannot be undone and such a history is illegal.
//
// It also returns the history of every resource the model found not
// linearizable, for diagnosis.
func check(h *history, timeout time.Duration, failover bool) (verdict, []string, map[string][]op) {
	ops, writes := h.snapshot()
	var v verdict
	var notes []string
	illegal := map[string][]op{}
	h.mu.Lock()
	v.Refused = h.refused
	h.mu.Unlock()
	v.Ops, v.Writes = len(ops), len(writes)
	byRes := map[string][]op{}
	for _, o := range ops {
		byRes[o.Resource] = append(byRes[o.Resource], o)
		if o.Kind == kindAcquire && o.Outcome == outGranted {
			v.Grants++
		}
		if o.Outcome == outUnknown {
			v.Unknown++
		}
	}
	wByRes := map[string][]write{}
	for _, w := range writes {
		wByRes[w.Resource] = append(wByRes[w.Resource], w)
		if !w.Accepted {
			v.Rejected++
		}
	}
	names := make([]string, 0, len(byRes))
	for r := range byRes {
		names = append(names, r)
	}
	sort.Strings(names)
	v.Resources = len(names)
	model := leaseModel.ToModel()
	for _, r := range names {
		ops := behindLines(byRes[r])
		res, _ := porcupine.CheckOperationsVerbose(model, porcupineOps(ops), timeout)
		switch res {
		case porcupine.Illegal:
			if failover && porcupine.CheckOperationsTimeout(model, porcupineOps(releasesMayBeLost(ops)), timeout) == porcupine.Ok {
				v.ModelLostRelease++
				notes = append(notes, fmt.Sprintf("model: resource %s: linearizable only if a release answered 204 may be undone later (a failover lost it)", r))
				break
			}
			v.ModelIllegal++
			illegal[r] = byRes[r]
			notes = append(notes, fmt.Sprintf("model: resource %s: history is not linearizable", r))
		case porcupine.Unknown:
			v.ModelUnknown++
			notes = append(notes, fmt.Sprintf("model: resource %s: search timed out after %v", r, timeout))
		}
		dg, n := doubleGrants(byRes[r])
		v.DoubleGrants += dg
		notes = append(notes, n...)
		tr, n := tokenRegressions(byRes[r])
		v.TokenRegressions += tr
		notes = append(notes, n...)
		st, sa, sr, n := fencing(byRes[r], wByRes[r])
		v.StaleAccepted += st
		v.SupersededAccepted += sa
		v.SupersededRejected += sr
		notes = append(notes, n...)
		if dg+tr+st+sa > 0 {
			// Kept too: a search that timed out says nothing, and the
			// other checkers' finding needs its history read.
			illegal[r] = byRes[r]
		}
	}
	return v, notes, illegal
}

// ticketLease is how long a waiter's place in line may outlive its
// request (redislock.TicketLease: its gateway killed, or draining).
const ticketLease = 3 * time.Second

// behindLines returns ops of one resource with every refusal of an
// acquire that did not wait marked behindLine when a line of waiters may
// explain it: a waiting acquire by another owner was in flight then, or
// had been up to ticketLease before (docs/waiting.md: a call that does
// not wait does not jump a non-empty line, even when the name is free).
// Such a refusal proves no lease, so the model lets it observe nothing,
// as it does a waiting acquire that ran out. Other refusals still prove
// a lease. Histories of gateways without lines are checked without it.
func behindLines(ops []op) []op {
	out := slices.Clone(ops)
	for i, o := range out {
		if o.Kind != kindAcquire || o.WaitMs > 0 || o.Outcome != outNotGranted {
			continue
		}
		for _, w := range ops {
			if w.Kind == kindAcquire && w.WaitMs > 0 && w.Owner != o.Owner &&
				w.Call <= o.Return && w.Return+int64(ticketLease) >= o.Call {
				out[i].behindLine = true
				break
			}
		}
	}
	return out
}

// releasesMayBeLost returns ops with every release answered 204 turned
// into a release of unknown outcome.
func releasesMayBeLost(ops []op) []op {
	res := append([]op(nil), ops...)
	for i := range res {
		if res[i].Kind == kindRelease && res[i].Outcome == outOK {
			res[i].Outcome = outUnknown
		}
	}
	return res
}

// lease is one holder's lease, gathered from its grants and renewals.
type lease struct {
	owner string
	token int64
	// start is the Redis time of the first grant, end the latest expiry
	// any grant or renewal of this owner gave.
	start, end int64
	// grantReturn is when the first grant's answer came back.
	grantReturn int64
	// releaseCall is the earliest call of a release of this owner that
	// may have taken effect (answered 204 or unknown); -1 when none.
	releaseCall int64
}

func leases(ops []op) []lease {
	byOwner := map[string]*lease{}
	var order []string
	for _, o := range ops {
		if o.Kind != kindAcquire || o.Outcome != outGranted {
			continue
		}
		l, ok := byOwner[o.Owner]
		if !ok {
			l = &lease{owner: o.Owner, token: o.Token, start: o.now(), end: o.ExpiresAt, grantReturn: o.Return, releaseCall: -1}
			byOwner[o.Owner] = l
			order = append(order, o.Owner)
		}
		if o.now() < l.start {
			l.start, l.token, l.grantReturn = o.now(), o.Token, o.Return
		}
		l.end = max(l.end, o.ExpiresAt)
	}
	for _, o := range ops {
		l, ok := byOwner[o.Owner]
		if !ok {
			continue
		}
		switch {
		case o.Kind == kindRenew && o.Outcome == outOK:
			l.end = max(l.end, o.ExpiresAt)
		case o.Kind == kindRelease && (o.Outcome == outOK || o.Outcome == outUnknown):
			if l.releaseCall < 0 || o.Call < l.releaseCall {
				l.releaseCall = o.Call
			}
		}
	}
	res := make([]lease, 0, len(order))
	for _, k := range order {
		res = append(res, *byOwner[k])
	}
	sort.Slice(res, func(i, j int) bool { return res[i].start < res[j].start })
	return res
}

// doubleGrants counts leases granted (by the Redis clock) while another
// owner's lease was live and not possibly released before the grant.
func doubleGrants(ops []op) (int, []string) {
	ls := leases(ops)
	n := 0
	var notes []string
	for j := range ls {
		for i := 0; i < j; i++ {
			a, b := ls[i], ls[j]
			if a.owner == b.owner || b.start >= a.end || b.start < a.start {
				continue
			}
			if a.releaseCall >= 0 && a.releaseCall < b.grantReturn {
				continue // a's release may have come first
			}
			n++
			if n <= 3 {
				notes = append(notes, fmt.Sprintf("double grant: %s (token %d) granted at %d while %s (token %d) held it until %d", b.owner, b.token, b.start, a.owner, a.token, a.end))
			}
			break
		}
	}
	return n, notes
}

// tokenRegressions: a grant to a new holder whose token is not above a
// token granted to another owner by a grant that answered before this
// one was called.
func tokenRegressions(ops []op) (int, []string) {
	var grants []op
	for _, o := range ops {
		if o.Kind == kindAcquire && o.Outcome == outGranted {
			grants = append(grants, o)
		}
	}
	byCall := append([]op(nil), grants...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	byReturn := append([]op(nil), grants...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].Return < byReturn[j].Return })
	var top topTwo
	k, n := 0, 0
	var notes []string
	for _, g := range byCall {
		for k < len(byReturn) && byReturn[k].Return < g.Call {
			top.add(byReturn[k].Owner, byReturn[k].Token)
			k++
		}
		if best := top.maxOther(g.Owner); best > 0 && g.Token <= best {
			n++
			if n <= 3 {
				notes = append(notes, fmt.Sprintf("token regression: %s granted token %d after another owner was granted %d", g.Owner, g.Token, best))
			}
		}
	}
	return n, notes
}

// fencing checks the store's writes against the grants: a write accepted
// with a token below one already granted to another owner (stale), and a
// write accepted from a holder after another owner was granted the
// resource later than it by the Redis clock (superseded).
func fencing(ops []op, writes []write) (stale, superAcc, superRej int, notes []string) {
	ls := leases(ops)
	start := map[string]int64{}
	for _, l := range ls {
		start[l.owner] = l.start
	}
	byReturn := append([]lease(nil), ls...)
	sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].grantReturn < byReturn[j].grantReturn })
	ws := append([]write(nil), writes...)
	sort.Slice(ws, func(i, j int) bool { return ws[i].At < ws[j].At })
	var top, starts topTwo
	k := 0
	for _, w := range ws {
		for k < len(byReturn) && byReturn[k].grantReturn < w.At {
			top.add(byReturn[k].owner, byReturn[k].token)
			starts.add(byReturn[k].owner, byReturn[k].start)
			k++
		}
		if w.Accepted && w.Token < top.maxOther(w.Owner) {
			stale++
			if stale <= 3 {
				notes = append(notes, fmt.Sprintf("fencing: store accepted %s's token %d after token %d was granted to another owner", w.Owner, w.Token, top.maxOther(w.Owner)))
			}
		}
		superseded := starts.maxOther(w.Owner) > start[w.Owner]
		switch {
		case superseded && w.Accepted:
			superAcc++
			if superAcc <= 3 {
				notes = append(notes, fmt.Sprintf("fencing: store accepted a write of %s (token %d) after another owner was granted the resource", w.Owner, w.Token))
			}
		case superseded:
			superRej++
		}
	}
	return stale, superAcc, superRej, notes
}

// topTwo keeps the largest value (a token, a start time) and the largest
// value of any other owner, so "the largest value not of owner X" is one
// comparison.
type topTwo struct {
	owner       string
	best, other int64
}

func (t *topTwo) add(owner string, token int64) {
	switch {
	case owner == t.owner:
		t.best = max(t.best, token)
	case token > t.best:
		t.other = t.best
		t.owner, t.best = owner, token
	default:
		t.other = max(t.other, token)
	}
}

func (t *topTwo) maxOther(owner string) int64 {
	if owner == t.owner {
		return t.other
	}
	return t.best
}
