package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/webhooktest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/metrics"
	"github.com/leasegate/leasegate/webhook"
)

const secret = "0123456789abcdef-test-secret"

// testConfig has short backoffs and timeouts; the bounds the test waits
// with are generous.
func testConfig(url, consumer string, m *metrics.Metrics) webhook.Config {
	return webhook.Config{
		URLs: []string{url}, Secret: secret, Prefix: "lgtest:", Consumer: consumer,
		MaxAttempts: 10_000, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 40 * time.Millisecond,
		Timeout: 300 * time.Millisecond, ClaimAfter: time.Second, Poll: 10 * time.Millisecond,
		Log: zap.NewNop(), Metrics: m,
	}
}

func start(t *testing.T, b *redistest.Backend, cfg webhook.Config) *webhook.Deliverer {
	t.Helper()
	d, err := webhook.New(b.RDB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// makeEvents flags (and policy-bans) a user, bans, unbans and clears:
// five outbox events per user.
func makeEvents(t *testing.T, svc *abuse.Service, users ...string) {
	t.Helper()
	ctx := context.Background()
	op := leasegate.RequestMeta{Operator: "ops-key"}
	for _, u := range users {
		for i := 0; i < 2; i++ {
			if _, err := svc.Attempt(ctx, "shop", "login", u, time.Minute, leasegate.RequestMeta{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.BanUser(ctx, "shop", u, time.Hour, "by hand", op); err != nil {
			t.Fatal(err)
		}
		if err := svc.Unban(ctx, "shop", u, op); err != nil {
			t.Fatal(err)
		}
		if err := svc.ClearFlags(ctx, "shop", u, op); err != nil {
			t.Fatal(err)
		}
	}
}

// outboxIDs are the event ids in the outbox.
func outboxIDs(t *testing.T, b *redistest.Backend) map[string]bool {
	t.Helper()
	xs, err := b.RDB.XRange(context.Background(), keyspace.Space{Prefix: "lgtest:"}.Outbox(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, x := range xs {
		out[x.Values["id"].(string)] = true
	}
	return out
}

// A receiver that fails, then times out, then recovers, with the
// delivering gateway stopped in the middle (its events claimed but not
// delivered) and two others taking over: every event arrives, every
// signature verifies, and an event that arrives twice has the same id
// and body. Events written once both gateways run arrive exactly once.
func TestEveryEventIsDeliveredAcrossFailuresTimeoutsAndARestart(t *testing.T) {
	t.Parallel()
	redistest.EachBackend(t, func(t *testing.T, b *redistest.Backend) {
		if b.Mini != nil {
			b.RealClock() // XCLAIM's idle times follow real time
		}
		pol := abuse.DefaultPolicies()
		pol.Locks["login"] = abuse.Policy{MaxAttempts: 2, BanAfterFlags: 1, BanFor: time.Minute}
		svc := abuse.New(b.RDB, abuse.Options{Prefix: "lgtest:", Policies: pol, Log: zap.NewNop(), Outbox: true})
		rcv := webhooktest.New(t, secret, webhooktest.Fail)
		m := metrics.NewStandalone()

		a := start(t, b, testConfig(rcv.URL, "gw-a", m))
		makeEvents(t, svc, "u1", "u2", "u3")
		first := outboxIDs(t, b)
		if len(first) != 15 {
			t.Fatalf("got %d events in the outbox, want 15", len(first))
		}
		rcv.WaitRequests(t, 30, "the receiver failing")

		rcv.SetMode(webhooktest.Hang)
		rcv.WaitRequests(t, 1, "the receiver hanging")
		// The gateway goes away while its events are claimed and undelivered.
		a.Close()
		if got := testutil.ToFloat64(m.WebhookDeliveries.WithLabelValues("failed")); got < 30 {
			t.Errorf("got %v failed deliveries counted, want at least 30", got)
		}

		rcv.SetMode(webhooktest.OK)
		start(t, b, testConfig(rcv.URL, "gw-b", m))
		start(t, b, testConfig(rcv.URL, "gw-c", m))
		rcv.WaitDelivered(t, first, "after the restart")

		makeEvents(t, svc, "u4", "u5")
		second := outboxIDs(t, b)
		for id := range first {
			delete(second, id)
		}
		if len(second) != 10 {
			t.Fatalf("got %d new events, want 10", len(second))
		}
		rcv.WaitDelivered(t, second, "with two gateways running")

		if bad := rcv.BadSignatures(); bad != 0 {
			t.Errorf("got %d deliveries with a bad signature", bad)
		}
		for id, bodies := range rcv.Bodies() {
			for _, body := range bodies[1:] {
				if body != bodies[0] {
					t.Errorf("event %s delivered twice with different bodies:\n%s\n%s", id, bodies[0], body)
				}
			}
			if second[id] && len(bodies) != 1 {
				t.Errorf("event %s written while both gateways ran was delivered %d times, want once", id, len(bodies))
			}
			if !first[id] && !second[id] {
				t.Errorf("got event %s that is not in the outbox", id)
			}
		}
	})
}

// An event the receiver never takes is given up on after MaxAttempts
// tries: moved to the dead-letter stream, counted, no longer pending.
func TestAnEventIsDeadLetteredAfterTheLastTry(t *testing.T) {
	t.Parallel()
	b := redistest.OnMini(t)
	b.RealClock()
	svc := abuse.New(b.RDB, abuse.Options{Prefix: "lgtest:", Log: zap.NewNop(), Outbox: true})
	rcv := webhooktest.New(t, secret, webhooktest.Fail)
	m := metrics.NewStandalone()
	cfg := testConfig(rcv.URL, "gw-a", m)
	cfg.MaxAttempts = 3
	start(t, b, cfg)
	if _, err := svc.BanUser(context.Background(), "shop", "u1", time.Hour, "spam", leasegate.RequestMeta{Operator: "op"}); err != nil {
		t.Fatal(err)
	}
	rcv.WaitRequests(t, 3, "three tries")
	ks := keyspace.Space{Prefix: "lgtest:"}
	apptest.WaitFor(t, "the event is dead-lettered", func() bool {
		n, err := b.RDB.XLen(context.Background(), ks.DeadLetters()).Result()
		return err == nil && n == 1
	})
	xs, err := b.RDB.XRange(context.Background(), ks.DeadLetters(), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v := xs[0].Values; v["type"] != "ban" || v["tries"] != "3" || v["url"] != rcv.URL || v["tenant"] != "shop" {
		t.Errorf("got dead letter %v", v)
	}
	if got := testutil.ToFloat64(m.WebhookDeliveries.WithLabelValues("dead")); got != 1 {
		t.Errorf("got %v dead deliveries counted, want 1", got)
	}
	p, err := b.RDB.XPending(context.Background(), ks.Outbox(), webhook.Group(rcv.URL)).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("got pending %+v %v, want none", p, err)
	}
}

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_764_495_000, 0)
	body := []byte(`{"id":"e1","type":"ban"}`)
	sig := webhook.Sign("s3cr3t", at, body)
	if want := "t=1764495000,v1="; sig[:len(want)] != want {
		t.Fatalf("got %q", sig)
	}
	if err := webhook.Verify("s3cr3t", sig, body, at.Add(time.Minute), 5*time.Minute); err != nil {
		t.Errorf("a good signature: %v", err)
	}
	for name, c := range map[string]struct {
		secret, header string
		body           []byte
		now            time.Time
	}{
		"another secret":  {"other", sig, body, at},
		"another body":    {"s3cr3t", sig, []byte(`{"id":"e2"}`), at},
		"too old":         {"s3cr3t", sig, body, at.Add(time.Hour)},
		"no v1":           {"s3cr3t", "t=1764495000", body, at},
		"garbage":         {"s3cr3t", "hello", body, at},
		"another t, same": {"s3cr3t", "t=1764495001," + sig[len("t=1764495000,"):], body, at},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if err := webhook.Verify(c.secret, c.header, c.body, c.now, 5*time.Minute); err == nil {
				t.Error("got nil, want ErrBadSignature")
			}
		})
	}
}
