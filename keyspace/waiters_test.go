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
