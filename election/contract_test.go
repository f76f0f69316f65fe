package election_test

import (
	"testing"

	"github.com/leasegate/leasegate/election"
	"github.com/leasegate/leasegate/internal/contracttest"
	"github.com/leasegate/leasegate/redislock"
)

// The Redis elections keep the contract that the Go client keeps over
// HTTP (client/contract_test.go), on miniredis and on a real
// redis-server.
func TestServiceKeepsTheElectionContract(t *testing.T) {
	t.Parallel()
	contracttest.ForEachStore(t, func(t *testing.T, s contracttest.Store) {
		contracttest.Elections(t, func(t *testing.T) contracttest.ElectionBackend {
			return contracttest.ElectionBackend{Elections: newService(t, s), Advance: s.Advance, Outage: s.Outage}
		})
	})
}

// newService is a Service under a prefix of its own, with a Waiter on its
// release channel.
func newService(t *testing.T, s contracttest.Store) *election.Service {
	t.Helper()
	prefix := contracttest.Prefix()
	w := redislock.NewWaiter(s.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
	t.Cleanup(w.Close)
	return election.New(s.RDB, nil, w, election.Options{Config: redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"}})
}
