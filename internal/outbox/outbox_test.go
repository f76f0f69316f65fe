package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/outbox"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
)

// Off (nil or not On), a Writer adds no key and writes nothing; on one
// Redis it hands the outbox to the script and writes nothing itself.
func TestWhereTheEventGoes(t *testing.T) {
	t.Parallel()
	b := redistest.OnMini(t)
	ks := keyspace.Space{Prefix: "lgtest:"}
	var none *outbox.Writer
	for _, c := range []struct {
		name   string
		w      *outbox.Writer
		inline bool
	}{
		{"a nil writer adds nothing", none, false},
		{"a writer with webhooks off adds nothing", outbox.New(b.RDB, ks, outbox.Options{}), false},
		{"on one Redis the script gets the outbox", outbox.New(b.RDB, ks, outbox.Options{On: true, MaxLen: 7}), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := []string{}
			if c.inline {
				want = []string{ks.Outbox()}
			}
			if got := c.w.Keys(); len(got) != len(want) || (c.inline && got[0] != want[0]) {
				t.Errorf("got keys %v, want %v", got, want)
			}
			if got := c.w.Inline(); got != c.inline {
				t.Errorf("got Inline %v, want %v", got, c.inline)
			}
			c.w.After(context.Background(), "id", "x", "type", outbox.Ban)
			if n := b.RDB.XLen(context.Background(), ks.Outbox()).Val(); n != 0 {
				t.Errorf("After wrote %d entries outside Cluster, want none (the script writes)", n)
			}
		})
	}
	if got := none.MaxLen(); got != outbox.DefaultMaxLen {
		t.Errorf("nil MaxLen: got %d, want %d", got, outbox.DefaultMaxLen)
	}
	if got := outbox.New(b.RDB, ks, outbox.Options{On: true, MaxLen: 7}).MaxLen(); got != 7 {
		t.Errorf("MaxLen: got %d, want 7", got)
	}
}

// On Cluster the script gets no outbox key and After writes the event; a
// failed write is logged and counted, not returned.
func TestAFailedSecondStepIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	// Nothing listens on the port: every Cluster call fails at once.
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{redistest.FreeAddr(t)}})
	t.Cleanup(func() { _ = rc.Close() })
	lb := &logtest.Buffer{}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), lb, zapcore.DebugLevel))
	failed := 0
	w := outbox.New(rc, keyspace.Space{}, outbox.Options{On: true, Log: log, Failed: func() { failed++ }})
	if keys := w.Keys(); len(keys) != 0 || w.Inline() {
		t.Errorf("got keys %v, inline %v on Cluster; want none, false", keys, w.Inline())
	}
	w.After(context.Background(), "id", "x", "type", outbox.ForceRelease)
	if failed != 1 {
		t.Errorf("got %d failures counted, want 1", failed)
	}
	if !strings.Contains(lb.String(), "could not write a webhook event") {
		t.Errorf("got log %q, want the failure", lb.String())
	}
}
