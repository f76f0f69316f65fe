package claim_test

import (
	"testing"

	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/redislock"
)

// The Redis claims keep the contract that the Go client keeps over HTTP
// (client/contract_test.go), on miniredis and on a real redis-server.
func TestServiceKeepsTheClaimContract(t *testing.T) {
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		contracttest.Claims(t, func(t *testing.T) contracttest.ClaimBackend {
			return contracttest.ClaimBackend{Claims: claim.New(s.RDB, claim.Options{Config: redislock.Config{Prefix: contracttest.Prefix()}}), Advance: s.Advance, Outage: s.Outage}
		})
	})
}
