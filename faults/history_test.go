package faults

import (
	"sync"
	"time"
)

// kind is what a recorded call asked for.
type kind int

const (
	kindAcquire kind = iota
	kindRenew
	kindRelease
)

func (k kind) String() string {
	switch k {
	case kindAcquire:
		return "acquire"
	case kindRenew:
		return "renew"
	case kindRelease:
		return "release"
	}
	return "kind?"
}

// outcome is what a recorded call was told.
type outcome int

const (
	// outGranted: acquire answered acquired:true.
	outGranted outcome = iota
	// outNotGranted: acquire answered acquired:false.
	outNotGranted
	// outOK: renew answered 200, release 204.
	outOK
	// outNotFound: 404, no live lease.
	outNotFound
	// outForbidden: 403, another owner's or another token's lease.
	outForbidden
	// outUnknown: 503, a timeout or a broken connection after the
	// request was sent. The call may or may not have taken effect.
	outUnknown
	// outNotHeld: an election's 404 to a resignation: no live
	// leadership, or another candidate's or term's (either). Last, so
	// the values above, stored in testdata histories, keep their numbers.
	outNotHeld
)

func (o outcome) String() string {
	switch o {
	case outGranted:
		return "granted"
	case outNotGranted:
		return "not-granted"
	case outOK:
		return "ok"
	case outNotFound:
		return "not-found"
	case outForbidden:
		return "forbidden"
	case outNotHeld:
		return "not-held"
	case outUnknown:
		return "unknown"
	}
	return "outcome?"
}

// op is one recorded call. Call and Return are nanoseconds on the
// history's monotonic clock; Token, AcquiredAt and ExpiresAt come from the
// gateway's answer (AcquiredAt and ExpiresAt are Unix milliseconds of the
// Redis clock).
type op struct {
	Client   int
	Kind     kind
	Resource string
	Owner    string
	// ReqToken is the token sent with a renew or release.
	ReqToken int64
	TTLms    int64
	WaitMs   int64
	Call     int64
	Return   int64

	Outcome      outcome
	Status       int
	Token        int64
	AcquiredAt   int64
	ExpiresAt    int64
	RetryAfterMs int64
	Err          string
	// behindLine: a refusal of an acquire that did not wait which a
	// line of waiters may explain (behindLines).
	behindLine bool
}

// now is the Redis time (Unix ms) at which a grant or renewal was decided:
// the scripts set expires_at = now + ttl exactly.
func (o op) now() int64 { return o.ExpiresAt - o.TTLms }

// write is one attempt to write to the simulated downstream store, made
// while the writer believed it held the lease.
type write struct {
	Resource string
	Owner    string
	Token    int64
	At       int64
	Accepted bool
}

// history is everything one scenario recorded.
type history struct {
	start time.Time

	mu     sync.Mutex
	ops    []op
	writes []write
	// refused counts calls that provably never reached a gateway (the
	// dial failed); they are not part of the history.
	refused int
	// unexpected counts answers outside the API's contract for the
	// workload (a 4xx other than 403/404, an undecodable body).
	unexpected []string
}

func newHistory() *history { return &history{start: time.Now()} }

// clock is the history's monotonic time in nanoseconds.
func (h *history) clock() int64 { return int64(time.Since(h.start)) }

func (h *history) add(o op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, o)
}

func (h *history) refuse() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused++
}

func (h *history) unexpect(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.unexpected) < 20 {
		h.unexpected = append(h.unexpected, s)
	}
}

// snapshot returns copies of the ops and writes.
func (h *history) snapshot() ([]op, []write) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...), append([]write(nil), h.writes...)
}

// store is the simulated downstream store: per resource it keeps the
// highest token it accepted and refuses a lower one (equal is the same
// holder writing again). Check and write are one step under its mutex.
type store struct {
	h       *history
	mu      sync.Mutex
	highest map[string]int64
}

func newStore(h *history) *store { return &store{h: h, highest: map[string]int64{}} }

// put writes with token on behalf of owner if the writer still believes
// it holds the lease (the history clock is before deadline), and reports
// whether a write was attempted and whether the store accepted it.
func (s *store) put(resource, owner string, token, deadline int64) (attempted, accepted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.h.clock()
	if at >= deadline {
		return false, false
	}
	accepted = token >= s.highest[resource]
	if accepted {
		s.highest[resource] = token
	}
	s.h.mu.Lock()
	s.h.writes = append(s.h.writes, write{Resource: resource, Owner: owner, Token: token, At: at, Accepted: accepted})
	s.h.mu.Unlock()
	return true, accepted
}
