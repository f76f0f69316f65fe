package abuse

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The backends are redistest's: eachBackend runs a test on miniredis
// (a frozen clock that Advance moves) and on a real redis-server (where
// Advance waits for the server's clock).
var eachBackend = redistest.EachBackend

// miniBackend is a miniredis with a frozen clock that Advance moves.
var miniBackend = redistest.OnMini

func newService(t *testing.T, b *redistest.Backend, pol Policies) (*Service, *logtest.Buffer) {
	t.Helper()
	lb := &logtest.Buffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel)
	return New(b.RDB, Options{Prefix: "lgtest:", Policies: pol, Log: zap.New(core)}), lb
}

func policies(max int) Policies {
	p := DefaultPolicies()
	p.Default.MaxAttempts = max
	p.AttemptLogMaxEntries = 100_000
	return p
}

// flagUser makes maxAttempts attempts, which flag user under policies(maxAttempts).
// It reports errors with t.Error, so it may run inside a Redis hook.
func flagUser(t *testing.T, svc *Service, tenant, lock, user string, maxAttempts int) {
	t.Helper()
	for range maxAttempts {
		if _, err := svc.Attempt(context.Background(), tenant, lock, user, time.Minute, leasegate.RequestMeta{}); err != nil {
			t.Error(err)
		}
	}
}

// newOutboxService is a service with the outbox on whose "login" lock
// follows login.
func newOutboxService(rdb redis.UniversalClient, login Policy) *Service {
	pol := policies(2)
	pol.Locks["login"] = login
	return New(rdb, Options{Prefix: "lgtest:", Policies: pol, Log: zap.NewNop(), Outbox: true})
}
