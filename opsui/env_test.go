package opsui_test

import (
	"testing"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// epoch is the miniredis clock's start, so timestamps are exact.
var epoch = redistest.Epoch

// newAbuseEnv is the gateway with user locks on miniredis, its callers
// named by the X-Test-* headers (apptest.HeaderAuth).
func newAbuseEnv(t *testing.T, pol abuse.Policies) *apptest.App {
	t.Helper()
	return apptest.NewApp(t, redistest.OnMini(t), apptest.Options{UserLocks: true, Policies: pol, HeaderAuth: true})
}
