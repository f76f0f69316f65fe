package keyspace_test

import (
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

func TestWaitersKeySharesTheLockKeysHashTag(t *testing.T) {
	t.Parallel()
	r := keyspace.Space{}.Resource("acme", "a:b")
	if got, want := r.Waiters(), "lg:{t=acme;r=a%3Ab}:waiters"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := r.Queue(), "lg:{t=acme;r=a%3Ab}:queue"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLockKeysAreTheResourcesKeys(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "lg:", "x:y:"} {
		for _, tenant := range []string{"", "acme", "a;b=c"} {
			for _, res := range []string{"daily-report", "a b", "ü", "{a}", "a:fence", "50%", "\x00"} {
				s := keyspace.Space{Prefix: prefix}
				lock, waiters, queue := s.LockKeys(tenant, res)
				r := s.Resource(tenant, res)
				if lock != r.Lock() || waiters != r.Waiters() || queue != r.Queue() {
					t.Errorf("LockKeys(%q, %q) under %q: got %q %q %q, want %q %q %q", tenant, res, prefix,
						lock, waiters, queue, r.Lock(), r.Waiters(), r.Queue())
				}
			}
		}
	}
}

// The release scripts SPUBLISH to a channel with a hash tag and PUBLISH
// to one without; Released must be the first kind and the fleet-wide
// channel the server names (prefix + "released") the second.
func TestShardChannelsAreTheOnesWithAHashTag(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{Prefix: "lg:"}
	for _, c := range []struct {
		channel string
		want    bool
	}{
		{s.Resource("acme", "job").Released(), true},
		{s.Resource("", "{a}").Released(), true},
		{s.Semaphore("acme", "payments").Released(), true},
		{"lg:released", false},
		{"", false},
	} {
		if got := keyspace.ShardChannel(c.channel); got != c.want {
			t.Errorf("ShardChannel(%q): got %v, want %v", c.channel, got, c.want)
		}
	}
}
