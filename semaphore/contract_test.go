package semaphore_test

import (
	"testing"

	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// The Redis semaphores keep the contract that the Go client keeps over
// HTTP (client/contract_test.go), on miniredis and on a real
// redis-server.
func TestServiceKeepsTheSemaphoreContract(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		contracttest.Semaphores(t, func(t *testing.T) contracttest.SemaphoreBackend {
			return contracttest.SemaphoreBackend{Semaphores: newService(t, s), Advance: s.Advance, Outage: s.Outage}
		})
	})
}

// newService is a Service under a prefix of its own, with a Waiter on its
// release channel.
func newService(t *testing.T, s contracttest.Store) *semaphore.Service {
	t.Helper()
	prefix := contracttest.Prefix()
	w := redislock.NewWaiter(s.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
	t.Cleanup(w.Close)
	return semaphore.New(s.RDB, w, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
}
