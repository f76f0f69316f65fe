package keyspace_test

import (
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

func TestWaitersKeySharesTheLockKeysHashTag(t *testing.T) {
	r := keyspace.Space{}.Resource("acme", "a:b")
	if got, want := r.Waiters(), "lg:{t=acme;r=a%3Ab}:waiters"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLockKeysAreTheResourcesKeys(t *testing.T) {
	for _, prefix := range []string{"", "lg:", "x:y:"} {
		for _, tenant := range []string{"", "acme", "a;b=c"} {
			for _, res := range []string{"daily-report", "a b", "ü", "{a}", "a:fence", "50%", "\x00"} {
				s := keyspace.Space{Prefix: prefix}
				lock, fence := s.LockKeys(tenant, res)
				r := s.Resource(tenant, res)
				if lock != r.Lock() || fence != r.Fence() {
					t.Errorf("LockKeys(%q, %q) under %q: got %q %q, want %q %q", tenant, res, prefix, lock, fence, r.Lock(), r.Fence())
				}
			}
		}
	}
}
