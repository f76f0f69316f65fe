package server_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/webhooktest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/webhook"
)

// --webhook-url and --webhook-secret: a flag made through the API while
// the receiver is down, the gateway restarted, and the event arrives
// signed from the new gateway once the receiver is back.
func TestWebhooksSurviveAGatewayRestart(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rcv := webhooktest.New(t, webhookSecret, webhooktest.Fail)
	cfg := webhookConfig(rs, rcv)

	first := cfg
	first.Addr = "127.0.0.1:0"
	s, err := server.New(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve() }()
	c := client.New("http://" + s.Addr())
	for i := 0; i < 5; i++ {
		if _, err := c.UserLock(context.Background(), "login", "user-9", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	rcv.WaitRequests(t, 3, "the receiver failing")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	rcv.SetMode(webhooktest.OK)
	gatewaytest.Start(t, cfg, nil)
	d := rcv.WaitDelivery(t, "the flag, by the restarted gateway", func(webhook.Event) bool { return true })
	if ev := d.Event; ev.Type != "flag" || ev.UserID != "user-9" || ev.Lock != "login" || ev.Attempts != 5 || ev.ID == "" {
		t.Errorf("got event %+v, want the flag of user-9 on login", ev)
	}
	if bad := rcv.BadSignatures(); bad != 0 {
		t.Errorf("got %d deliveries with a bad signature", bad)
	}
}

// An operator's forced release (DELETE /locks/{resource}?force=true)
// reaches the receiver as a signed force-release event naming the
// resource, the operator's key and the reason, once; a forced release of
// a free lock (404) sends nothing.
func TestAForcedReleaseIsDeliveredAsAWebhook(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	rcv := webhooktest.New(t, webhookSecret, webhooktest.OK)
	cfg := webhookConfig(rs, rcv)
	const opsKey = "webhook-test-ops-key-000001"
	cfg.APIKeys = "oncall:ops:shop:" + auth.HashKey(opsKey)
	s := gatewaytest.Start(t, cfg, nil)
	c := client.New(gatewaytest.URL(s), client.WithAPIKey(opsKey))
	ctx := context.Background()

	if _, err := c.ForceRelease(ctx, "jobs/free", "nothing to release"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("forced release of a free lock: got %v, want ErrNotFound", err)
	}
	lease, err := c.Acquire(ctx, "jobs/nightly", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForceRelease(ctx, "jobs/nightly", "worker-1 is wedged"); err != nil {
		t.Fatal(err)
	}
	d := rcv.WaitDelivery(t, "the force-release", func(ev webhook.Event) bool { return ev.Type == "force-release" })
	ev := d.Event
	if ev.Tenant != "shop" || ev.Resource != "jobs/nightly" || ev.Actor != "oncall" || ev.Reason != "worker-1 is wedged" ||
		len(ev.ID) != 32 || ev.UserID != "" {
		t.Errorf("got event %+v, want the force-release of jobs/nightly by oncall", ev)
	}
	if at, err := time.Parse(time.RFC3339, ev.At); err != nil || at.Before(lease.AcquiredAt.Truncate(time.Millisecond)) {
		t.Errorf("got at %q (%v), want the time of the release, after the grant at %v", ev.At, err, lease.AcquiredAt)
	}
	if got := d.Header.Get("Leasegate-Event-Type"); got != "force-release" {
		t.Errorf("got Leasegate-Event-Type %q, want force-release", got)
	}
	if bad := rcv.BadSignatures(); bad != 0 {
		t.Errorf("got %d deliveries with a bad signature", bad)
	}
	n, err := rs.Client(t).XLen(ctx, keyspace.Space{Prefix: cfg.KeyPrefix}.Outbox()).Result()
	if err != nil || n != 1 {
		t.Errorf("got %d outbox entries (%v), want the force-release alone", n, err)
	}
	for _, d := range rcv.Deliveries() {
		if d.Event.ID != ev.ID {
			t.Errorf("got another delivery %+v, want the force-release alone", d.Event)
		}
	}
}

const webhookSecret = "a-webhook-secret-of-some-length"

// webhookConfig is a gateway on rs that delivers to rcv, with short
// backoffs and polls.
func webhookConfig(rs *redistest.Server, rcv *webhooktest.Receiver) server.Config {
	cfg := server.DefaultConfig()
	cfg.RedisURL = rs.URL()
	cfg.AbuseLog = io.Discard
	cfg.Webhooks = webhook.Config{URLs: []string{rcv.URL}, Secret: webhookSecret,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Timeout: time.Second, ClaimAfter: 200 * time.Millisecond, Poll: 10 * time.Millisecond}
	return cfg
}

func TestWebhookConfigIsChecked(t *testing.T) {
	t.Parallel()
	for name, w := range map[string]webhook.Config{
		"a URL without a secret": {URLs: []string{"http://127.0.0.1:1/h"}},
		"a short secret":         {URLs: []string{"http://127.0.0.1:1/h"}, Secret: "short"},
		"a secret without a URL": {Secret: "0123456789abcdef0123"},
		"not http":               {URLs: []string{"ftp://x/h"}, Secret: "0123456789abcdef0123"},
		"the same URL twice":     {URLs: []string{"http://a/h", "http://a/h"}, Secret: "0123456789abcdef0123"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			cfg.Webhooks = w
			if err := cfg.Validate(); err == nil {
				t.Error("got nil, want an error")
			}
		})
	}
}
