package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/webhook"
)

// leasegate abuse webhooks shows the outbox and the dead letters: events
// the gateway gave up on after --webhook-max-attempts tries.
func TestAbuseWebhooksListsDeadLetters(t *testing.T) {
	tries := make(chan struct{}, 100)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tries <- struct{}{}
		http.Error(w, "nope", http.StatusBadGateway)
	}))
	t.Cleanup(rcv.Close)
	cfg := server.DefaultConfig()
	cfg.AbuseLog = io.Discard
	cfg.Webhooks = webhook.Config{URLs: []string{rcv.URL}, Secret: "0123456789abcdef-cli", MaxAttempts: 2,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 10 * time.Millisecond, Timeout: time.Second, Poll: 10 * time.Millisecond}
	url := gatewaytest.URL(gatewaytest.Start(t, cfg, nil))
	c := client.New(url)
	ctx := context.Background()

	r := runCLI(t, nil, "abuse", "webhooks", "--url", url)
	if r.code != 0 || !strings.Contains(r.stdout, "outbox: 0 entries, 0 pending delivery, 0 dead letters shown") {
		t.Fatalf("before: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if _, err := c.BanUser(ctx, "mallory", time.Hour, "card testing"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case <-tries:
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery try within 20s")
		}
	}
	end := time.Now().Add(20 * time.Second)
	for {
		st, err := c.WebhookStatus(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.DeadLetters) == 1 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("no dead letter within 20s: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	r = runCLI(t, nil, "abuse", "webhooks", "--url", url)
	for _, want := range []string{"1 dead letters shown", "ban", rcv.URL, "answered 502"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("got %q, want %q in it", r.stdout, want)
		}
	}
	r = runCLI(t, nil, "abuse", "webhooks", "--url", url, "--json")
	var st client.WebhookStatus
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Enabled || len(st.DeadLetters) != 1 {
		t.Fatalf("--json: %v %q", err, r.stdout)
	}
	var ev webhook.Event
	if err := json.Unmarshal(st.DeadLetters[0].Event, &ev); err != nil || ev.Type != "ban" || ev.UserID != "mallory" || ev.Reason != "card testing" || ev.ID != st.DeadLetters[0].ID {
		t.Errorf("got dead event %+v (%v)", ev, err)
	}
	if r := runCLI(t, nil, "abuse", "webhooks", "extra", "--url", url); r.code != 2 {
		t.Errorf("with an argument: got exit %d, want 2", r.code)
	}
}
