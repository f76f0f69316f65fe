package opsui_test

import (
	"testing"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/testenv"
)

// epoch is the miniredis clock's start, so timestamps are exact.
var epoch = redistest.Epoch

// newAbuseEnv is the gateway with user locks on miniredis, its callers
// named by the X-Test-* headers (testenv.HeaderAuth).
func newAbuseEnv(t *testing.T, pol abuse.Policies) *testenv.App {
	t.Helper()
	return testenv.NewApp(t, redistest.OnMini(t), testenv.Options{UserLocks: true, Policies: pol, HeaderAuth: true})
}
