package abuse

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/logbuf"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The backends are redistest's: eachBackend runs a test on miniredis
// (a frozen clock that Advance moves) and on a real redis-server (where
// Advance waits for the server's clock).
var eachBackend = redistest.EachBackend

// miniBackend is a miniredis with a frozen clock that Advance moves.
var miniBackend = redistest.OnMini

func newService(t *testing.T, b *redistest.Backend, pol Policies) (*Service, *logbuf.Buffer) {
	t.Helper()
	lb := &logbuf.Buffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel)
	return New(b.RDB, Options{Prefix: "lgtest:", Policies: pol, Log: zap.New(core)}), lb
}

func policies(max int) Policies {
	p := DefaultPolicies()
	p.Default.MaxAttempts = max
	return p
}
