package abuse

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/contract"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The user-lock engine and its registry keep the contract that the Go
// client keeps over HTTP (client/contract_test.go), on miniredis and on a
// real redis-server.
func TestServiceKeepsTheUserLockAndRegistryContracts(t *testing.T) {
	for _, suite := range []struct {
		name string
		run  func(*testing.T, func(*testing.T) contract.AbuseBackend)
	}{
		{"user locks", contract.UserLocks},
		{"registry", contract.Flags},
	} {
		t.Run(suite.name+" on miniredis", func(t *testing.T) {
			mb := miniBackend(t)
			suite.run(t, func(t *testing.T) contract.AbuseBackend {
				b := contractBackend(t, mb.RDB, func(t *testing.T, d time.Duration) { mb.Advance(t, d) })
				b.Outage = func(t *testing.T) {
					mb.Mini.SetError("LOADING redis is loading")
					t.Cleanup(func() { mb.Mini.SetError("") })
				}
				return b
			})
		})
		t.Run(suite.name+" on a real redis-server", func(t *testing.T) {
			rdb := redistest.Start(t).Client(t)
			suite.run(t, func(t *testing.T) contract.AbuseBackend {
				return contractBackend(t, rdb, contract.RedisTime(rdb))
			})
		})
	}
}

var contractPrefixes atomic.Int64

// contractBackend is a Service on rdb with keys of its own: max_attempts
// 3, user "vip" allowlisted.
func contractBackend(t *testing.T, rdb redis.UniversalClient, advance contract.Clock) contract.AbuseBackend {
	t.Helper()
	pol := policies(3)
	pol.Allowlist["vip"] = true
	svc := New(rdb, Options{Prefix: fmt.Sprintf("contract%d:", contractPrefixes.Add(1)), Policies: pol})
	return contract.AbuseBackend{
		UserLocks: svc, Flags: svc,
		MaxAttempts: 3, Allowlisted: "vip",
		Advance: advance,
	}
}
