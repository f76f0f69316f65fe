package bench

import (
	"fmt"
	"sync"
	"time"
)

// fenceTracker is the client-side consistency check: it keeps, per
// resource, who believes they hold it (from the grant until they ask for
// the release, or until their lease ends by the local clock) and the last
// token granted. A grant while another owner still believes it holds the
// resource, or a token not above the previous holder's, is a violation.
type fenceTracker struct {
	mu         sync.Mutex
	res        map[string]*fenceState
	grants     int64
	violations int64
	shown      []string
}

type fenceState struct {
	owner     string // "" when nobody believes they hold it
	token     int64
	until     time.Time // the holder's lease end by the local clock
	seen      bool
	lastToken int64
	lastOwner string
}

func newFenceTracker() *fenceTracker { return &fenceTracker{res: map[string]*fenceState{}} }

// grant records that owner got res with token; sent is when its acquire
// was sent, so sent+ttl is the earliest the gateway may give res to
// someone else without a release.
func (t *fenceTracker) grant(res, owner string, token int64, sent time.Time, ttl time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.grants++
	s := t.res[res]
	if s == nil {
		s = &fenceState{}
		t.res[res] = s
	}
	if s.owner != "" && now.Before(s.until) {
		t.violate(fmt.Sprintf("%s: %s was granted token %d while %s still held token %d (its lease had %v left)",
			res, owner, token, s.owner, s.token, s.until.Sub(now).Round(time.Millisecond)))
	}
	if s.seen && token <= s.lastToken {
		t.violate(fmt.Sprintf("%s: %s was granted token %d, not above %d granted before to %s",
			res, owner, token, s.lastToken, s.lastOwner))
	}
	s.owner, s.token, s.until = owner, token, sent.Add(ttl)
	s.seen, s.lastToken, s.lastOwner = true, token, owner
}

// drop ends owner's belief that it holds res.
func (t *fenceTracker) drop(res, owner string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.res[res]; s != nil && s.owner == owner {
		s.owner = ""
	}
}

func (t *fenceTracker) violate(msg string) {
	t.violations++
	if len(t.shown) < maxViolationsShown {
		t.shown = append(t.shown, msg)
	}
}
