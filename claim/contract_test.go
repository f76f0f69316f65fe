package claim_test

import (
	"testing"

	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/internal/contract"
)

// The Redis claims keep the contract that the Go client keeps over HTTP
// (client/contract_test.go), on miniredis and on a real redis-server.
func TestServiceKeepsTheClaimContract(t *testing.T) {
	contract.ForEachStore(t, func(t *testing.T, s contract.Store) {
		contract.Claims(t, func(t *testing.T) contract.ClaimBackend {
			return contract.ClaimBackend{Claims: claim.New(s.RDB, claim.Options{Prefix: contract.Prefix()}), Advance: s.Advance, Outage: s.Outage}
		})
	})
}
