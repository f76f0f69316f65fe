package keyspace_test

import (
	"strings"
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

// The election keys, byte for byte: stored data lives under them.
func TestElectionKeysAreLaidOutAsDocumented(t *testing.T) {
	t.Parallel()
	e := keyspace.Space{}.Elections()
	r := e.Resource("acme", "nightly-report")
	for _, c := range []struct{ got, want string }{
		{r.Lock(), "lg:elect:{t=acme;r=nightly-report}:lock"},
		{r.Waiters(), "lg:elect:{t=acme;r=nightly-report}:waiters"},
		{r.Released(), "lg:elect:{t=acme;r=nightly-report}:released"},
		{e.LockIndex("acme"), "lg:elect:{t=acme;r=locks%3Aindex}:held"},
		{keyspace.Space{Prefix: "x:"}.Elections().Resource("", "a").Lock(), "x:elect:{t=;r=a}:lock"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// No lock resource, whatever its name, spells an election's key: every
// other key starts with the prefix and a brace, an election's with the
// prefix and "elect:"; the two share the tag, so the same slot.
func TestElectionKeysNeverMeetALocksKeys(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{}
	for _, name := range []string{"x", "elect:x", "}:lock", "{t=;r=x}"} {
		el := s.Elections().Resource("t", name)
		for _, res := range []string{name, "elect:" + name, "elect:{t=t;r=" + name + "}"} {
			lk := s.Resource("t", res)
			if el.Lock() == lk.Lock() || el.Waiters() == lk.Waiters() || el.Lock() == lk.Waiters() {
				t.Errorf("election %q and lock %q share a key", name, res)
			}
		}
		if !strings.HasSuffix(el.Lock(), keyspace.HashTag("t", name)+":lock") {
			t.Errorf("election key %q does not carry the tenant's tag of %q", el.Lock(), name)
		}
	}
}
