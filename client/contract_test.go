package client_test

import (
	"io"
	"testing"
	"time"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
)

// The client's service interfaces, through a gateway, keep the contract
// that the in-process services keep (redislock, abuse, semaphore and
// claim contract_test.go): the same assertions, over HTTP.
func TestClientKeepsTheServiceContracts(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		url := "redis://" + s.RDB.Options().Addr
		// Each group has gateways and keys of its own. On redis-server
		// the groups run at once: their waits are real time. On
		// miniredis they share the frozen clock and the injected
		// outage, so they run one after another.
		run := func(name string, fn func(t *testing.T)) {
			t.Run(name, func(t *testing.T) {
				if s.Mini == nil {
					t.Parallel()
				}
				fn(t)
			})
		}
		run("locks through a gateway", func(t *testing.T) {
			contracttest.Locks(t, func(t *testing.T) contracttest.LockBackend {
				return contracttest.LockBackend{Locks: contractGateway(t, url).Locks(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		run("lock sets through a gateway", func(t *testing.T) {
			contracttest.LockSets(t, func(t *testing.T) contracttest.LockSetBackend {
				c := contractGateway(t, url)
				return contracttest.LockSetBackend{Sets: c.LockSets(), Locks: c.Locks(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		run("the operator side through a gateway", func(t *testing.T) {
			contracttest.Operator(t, func(t *testing.T) contracttest.OperatorBackend {
				c := contractGateway(t, url)
				return contracttest.OperatorBackend{Locks: c.Locks(), Ops: c.Operator()}
			})
		})
		run("user locks and flags through a gateway", func(t *testing.T) {
			contracttest.Abuse(t, func(t *testing.T) contracttest.AbuseBackend {
				c := contractGateway(t, url)
				return contracttest.AbuseBackend{
					UserLocks: c.UserLocks(), Flags: c.Flags(),
					MaxAttempts: 3, Allowlisted: "vip",
					Advance: s.Advance, Outage: s.Outage,
				}
			})
		})
		run("semaphores through a gateway", func(t *testing.T) {
			contracttest.Semaphores(t, func(t *testing.T) contracttest.SemaphoreBackend {
				return contracttest.SemaphoreBackend{Semaphores: contractGateway(t, url).Semaphores(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		run("elections through a gateway", func(t *testing.T) {
			contracttest.Elections(t, func(t *testing.T) contracttest.ElectionBackend {
				return contracttest.ElectionBackend{Elections: contractGateway(t, url).Elections(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		run("claims through a gateway", func(t *testing.T) {
			contracttest.Claims(t, func(t *testing.T) contracttest.ClaimBackend {
				return contracttest.ClaimBackend{Claims: contractGateway(t, url).Claims(), Advance: s.Advance, Outage: s.Outage}
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
	cfg.KeyPrefix = contracttest.Prefix()
	cfg.AbuseLog = io.Discard
	cfg.AbusePolicies = abuse.DefaultPolicies()
	cfg.AbusePolicies.Default.MaxAttempts = 3
	cfg.AbusePolicies.Allowlist["vip"] = true
	// A loaded 2-core test machine can stall a reply past the default 1 s
	// grace, which would mark the store down and answer 503 (the outage
	// behaviour has tests of its own in server/). These tests are about
	// the contract, so they give Redis longer.
	cfg.Redis.OutageGrace = 5 * time.Second
	s := gatewaytest.Start(t, cfg, nil)
	return client.New(gatewaytest.URL(s),
		client.WithRetryPolicy(client.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: 5 * time.Millisecond}))
}
