package client_test

import (
	"testing"

	"github.com/leasegate/leasegate/internal/contract"
)

// Semaphores and claims through a gateway keep the contract the Redis
// services keep (semaphore and claim contract_test.go).
func TestClientKeepsTheSemaphoreAndClaimContracts(t *testing.T) {
	contract.ForEachStore(t, func(t *testing.T, s contract.Store) {
		url := "redis://" + s.RDB.Options().Addr
		t.Run("semaphores", func(t *testing.T) {
			contract.Semaphores(t, func(t *testing.T) contract.SemaphoreBackend {
				return contract.SemaphoreBackend{Semaphores: contractGateway(t, url).Semaphores(), Advance: s.Advance, Outage: s.Outage}
			})
		})
		t.Run("claims", func(t *testing.T) {
			contract.Claims(t, func(t *testing.T) contract.ClaimBackend {
				return contract.ClaimBackend{Claims: contractGateway(t, url).Claims(), Advance: s.Advance, Outage: s.Outage}
			})
		})
	})
}
