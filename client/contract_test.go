package client_test

import (
	"io"
	"testing"
	"time"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/contract"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

// The client's service interfaces, through a gateway, keep the contract
// that the in-process services keep (redislock, abuse, semaphore and
// claim contract_test.go): the same assertions, over HTTP.
func TestClientKeepsTheServiceContracts(t *testing.T) {
	contract.ForEachStore(t, func(t *testing.T, s contract.Store) {
		url := "redis://" + s.RDB.Options().Addr
		t.Run("locks through a gateway", func(t *testing.T) {
			contract.Locks(t, func(t *testing.T) contract.LockBackend {
				return contract.LockBackend{Locks: contractGateway(t, url).Locks(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		t.Run("the operator side through a gateway", func(t *testing.T) {
			contract.Operator(t, func(t *testing.T) contract.OperatorBackend {
				c := contractGateway(t, url)
				return contract.OperatorBackend{Locks: c.Locks(), Ops: c.Operator()}
			})
		})
		t.Run("user locks and flags through a gateway", func(t *testing.T) {
			contract.Abuse(t, func(t *testing.T) contract.AbuseBackend {
				c := contractGateway(t, url)
				return contract.AbuseBackend{
					UserLocks: c.UserLocks(), Flags: c.Flags(),
					MaxAttempts: 3, Allowlisted: "vip",
					Advance: s.Advance, Outage: s.Outage,
				}
			})
		})
		t.Run("semaphores through a gateway", func(t *testing.T) {
			contract.Semaphores(t, func(t *testing.T) contract.SemaphoreBackend {
				return contract.SemaphoreBackend{Semaphores: contractGateway(t, url).Semaphores(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		t.Run("claims through a gateway", func(t *testing.T) {
			contract.Claims(t, func(t *testing.T) contract.ClaimBackend {
				return contract.ClaimBackend{Claims: contractGateway(t, url).Claims(), Advance: s.Advance, Outage: s.Outage}
			})
		})
	})
}

// contractGateway starts a gateway (open mode) on the Redis at url with
// keys of its own, user-lock max_attempts 3 and user "vip" allowlisted,
// and returns a client of it that retries quickly.
func contractGateway(t *testing.T, url string) *client.Client {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.RedisURL = url
	cfg.KeyPrefix = contract.Prefix()
	cfg.AbuseLog = io.Discard
	cfg.AbusePolicies = abuse.DefaultPolicies()
	cfg.AbusePolicies.Default.MaxAttempts = 3
	cfg.AbusePolicies.Allowlist["vip"] = true
	s := gatewaytest.Start(t, cfg, nil)
	return client.New(gatewaytest.URL(s),
		client.WithRetryPolicy(client.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: 5 * time.Millisecond}))
}
