package abuse

import (
	"testing"

	"github.com/leasegate/leasegate/internal/contracttest"
)

// The user-lock engine and its registry keep the contract that the Go
// client keeps over HTTP (client/contract_test.go), on miniredis and on a
// real redis-server.
func TestServiceKeepsTheUserLockAndRegistryContracts(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		contracttest.Abuse(t, func(t *testing.T) contracttest.AbuseBackend {
			return contractBackend(t, s)
		})
	})
}

// contractBackend is a Service on s with keys of its own: max_attempts
// 3, user "vip" allowlisted.
func contractBackend(t *testing.T, s contracttest.Store) contracttest.AbuseBackend {
	t.Helper()
	pol := policies(3)
	pol.Allowlist["vip"] = true
	svc := New(s.RDB, Options{Prefix: contracttest.Prefix(), Policies: pol})
	return contracttest.AbuseBackend{
		UserLocks: svc, Flags: svc,
		MaxAttempts: 3, Allowlisted: "vip",
		Advance: s.Advance, Outage: s.Outage,
	}
}
