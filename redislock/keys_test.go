package redislock_test

import (
	"testing"

	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// The engine stores under package keyspace's keys (pinned there, byte for
// byte), in the Locker's tenant, and announces a release with the lock key.
func TestLockerUsesTheKeyspaceLayout(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"", "lg:", "other:"} {
		for _, tenant := range []string{"", "acme", "a;r=b"} {
			for _, resource := range []string{"daily-report", "{a}", "a:fence", "user:u"} {
				l := wrap(redislock.New(nil, redislock.Config{Prefix: prefix})).Tenant(tenant)
				want := keyspace.Space{Prefix: prefix}.Resource(tenant, resource)
				lock, waiters := l.Keys(resource)
				if lock != want.Lock() || waiters != want.Waiters() {
					t.Errorf("prefix %q, tenant %q, resource %q: got keys %q, %q; want %q, %q",
						prefix, tenant, resource, lock, waiters, want.Lock(), want.Waiters())
				}
				if got := l.ReleaseMessage(resource); got != want.Lock() {
					t.Errorf("got release message %q, want the lock key %q", got, want.Lock())
				}
			}
		}
	}
	if lock, _ := wrap(redislock.New(nil, redislock.Config{})).Keys("daily-report"); lock != "lg:{t=;r=daily-report}:lock" {
		t.Errorf("default prefix: got %q, want %q", lock, "lg:{t=;r=daily-report}:lock")
	}
}
