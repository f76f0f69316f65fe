package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/webhook"
)

// --webhook-url and --webhook-secret: a flag made through the API while
// the receiver is down, the gateway restarted, and the event arrives
// signed from the new gateway once the receiver is back.
func TestWebhooksSurviveAGatewayRestart(t *testing.T) {
	rs := redistest.Start(t)
	const secret = "a-webhook-secret-of-some-length"
	var (
		mu   sync.Mutex
		up   bool
		got  []webhook.Event
		seen = make(chan struct{}, 100)
	)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		seen <- struct{}{}
		if !up {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("delivery with a bad signature: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev webhook.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("delivery %q: %v", body, err)
		}
		got = append(got, ev)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)

	cfg := server.DefaultConfig()
	cfg.RedisURL = rs.URL()
	cfg.AbuseLog = io.Discard
	cfg.Webhooks = webhook.Config{URLs: []string{rcv.URL}, Secret: secret,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Timeout: time.Second, ClaimAfter: 200 * time.Millisecond, Poll: 10 * time.Millisecond}

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
	for i := 0; i < 3; i++ {
		select {
		case <-seen:
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery attempt within 20s")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	up = true
	mu.Unlock()
	gatewaytest.Start(t, cfg, nil)
	deadline := time.After(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		select {
		case <-seen:
		case <-deadline:
			t.Fatal("the flag was not delivered by the restarted gateway within 20s")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	ev := got[0]
	if ev.Type != "flag" || ev.UserID != "user-9" || ev.Lock != "login" || ev.Attempts != 5 || ev.ID == "" {
		t.Errorf("got event %+v, want the flag of user-9 on login", ev)
	}
}

func TestWebhookConfigIsChecked(t *testing.T) {
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
