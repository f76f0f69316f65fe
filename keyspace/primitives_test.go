package keyspace_test

import (
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

// The semaphore and claim keys, byte for byte: stored data lives under them.
func TestSemaphoreAndClaimKeysAreLaidOutAsDocumented(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{}
	sem := s.Semaphore("acme", "payments")
	for _, c := range []struct{ got, want string }{
		{sem.Permits(), "lg:{t=acme;r=sem%3Apayments}:sem:permits"},
		{sem.Holders(), "lg:{t=acme;r=sem%3Apayments}:sem:holders"},
		{sem.Limit(), "lg:{t=acme;r=sem%3Apayments}:sem:limit"},
		{sem.Fence(), "lg:{t=acme;r=sem%3Apayments}:sem:fence"},
		{s.Claim("acme", "daily-checkin", "user-42:2026-12-01"), "lg:{t=acme;r=claim%3Adaily-checkin%3Auser-42%3A2026-12-01}:claim"},
		{keyspace.Space{Prefix: "x:"}.Claim("", "s", "k"), "x:{t=;r=claim%3As%3Ak}:claim"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestSemaphoreKeysNeverMeetALocksKeys(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{}
	r := s.Resource("t", "sem:x")
	sem := s.Semaphore("t", "x")
	for _, k := range []string{sem.Permits(), sem.Holders(), sem.Limit(), sem.Fence()} {
		if k == r.Lock() || k == r.Waiters() {
			t.Errorf("semaphore key %q is also a key of lock resource sem:x", k)
		}
	}
	if s.Semaphore("a", "x").Permits() == s.Semaphore("b", "x").Permits() {
		t.Error("got the same permits key in two tenants, want different")
	}
}
