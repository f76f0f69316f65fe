package client_test

import (
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/contract"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// The client's service interfaces, through a gateway, keep the contract
// that the in-process services keep (redislock and abuse
// contract_test.go): the same assertions, over HTTP.
func TestClientKeepsTheServiceContracts(t *testing.T) {
	for _, store := range []struct {
		name string
		// start returns the gateway's Redis URL, its clock and, when it
		// can, a way to make it fail.
		start func(t *testing.T) (url string, clock contract.Clock, outage func(t *testing.T))
	}{
		{"miniredis", func(t *testing.T) (string, contract.Clock, func(t *testing.T)) {
			m := miniredis.RunT(t)
			return "redis://" + m.Addr(), contract.FrozenMiniredis(m), func(t *testing.T) {
				m.SetError("LOADING redis is loading")
				t.Cleanup(func() { m.SetError("") })
			}
		}},
		{"a real redis-server", func(t *testing.T) (string, contract.Clock, func(t *testing.T)) {
			rs := redistest.Start(t)
			return rs.URL(), contract.RedisTime(rs.Client(t)), nil
		}},
	} {
		t.Run("locks through a gateway on "+store.name, func(t *testing.T) {
			url, clock, outage := store.start(t)
			contract.Locks(t, func(t *testing.T) contract.LockBackend {
				return contract.LockBackend{Locks: contractGateway(t, url).Locks(), Advance: clock, Outage: outage}
			})
		})
		t.Run("the operator side through a gateway on "+store.name, func(t *testing.T) {
			url, _, _ := store.start(t)
			contract.Operator(t, func(t *testing.T) contract.OperatorBackend {
				c := contractGateway(t, url)
				return contract.OperatorBackend{Locks: c.Locks(), Ops: c.Operator()}
			})
		})
		for _, suite := range []struct {
			name string
			run  func(*testing.T, func(*testing.T) contract.AbuseBackend)
		}{
			{"user locks", contract.UserLocks},
			{"flag registry", contract.Flags},
		} {
			t.Run(suite.name+" through a gateway on "+store.name, func(t *testing.T) {
				url, clock, outage := store.start(t)
				suite.run(t, func(t *testing.T) contract.AbuseBackend {
					c := contractGateway(t, url)
					return contract.AbuseBackend{
						UserLocks: c.UserLocks(), Flags: c.Flags(),
						MaxAttempts: 3, Allowlisted: "vip",
						Advance: clock, Outage: outage,
					}
				})
			})
		}
	}
}

var contractPrefixes atomic.Int64

// contractGateway starts a gateway (open mode) on the Redis at url with
// keys of its own, user-lock max_attempts 3 and user "vip" allowlisted,
// and returns a client of it that retries quickly.
func contractGateway(t *testing.T, url string) *client.Client {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.RedisURL = url
	cfg.KeyPrefix = fmt.Sprintf("contract%d:", contractPrefixes.Add(1))
	cfg.AbuseLog = io.Discard
	cfg.AbusePolicies = abuse.DefaultPolicies()
	cfg.AbusePolicies.Default.MaxAttempts = 3
	cfg.AbusePolicies.Allowlist["vip"] = true
	s := gatewaytest.Start(t, cfg, nil)
	return client.New(gatewaytest.URL(s),
		client.WithRetryPolicy(client.RetryPolicy{Attempts: 2, Base: time.Millisecond, Max: 5 * time.Millisecond}))
}
