package keyspace_test

import (
	"testing"

	"github.com/leasegate/leasegate/keyspace"
)

func TestOperatorKeysArePinned(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{}
	for _, c := range []struct{ got, want string }{
		{s.LockIndex("acme"), "lg:{t=acme;r=locks%3Aindex}:held"},
		{s.Resource("acme", "a:b").Forced(), "lg:{t=acme;r=a%3Ab}:forced"},
		{s.Audit("acme"), "lg:{t=acme;r=audit}:audit"},
		{s.GatewayActivity("9f2c"), "lg:{t=;r=ops%3Aactivity}:gw:9f2c"},
		{s.ActivityGateways(), "lg:{t=;r=ops%3Aactivity}:gateways"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestTheLockIndexNeverSharesAResourcesKey(t *testing.T) {
	t.Parallel()
	s := keyspace.Space{}
	r := s.Resource("acme", "locks:index")
	for _, k := range []string{r.Lock(), r.Waiters(), r.Forced()} {
		if k == s.LockIndex("acme") {
			t.Errorf("resource key %q is the index key", k)
		}
	}
}
