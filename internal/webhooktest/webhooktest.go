// Package webhooktest is a webhook receiver for tests: an httptest server
// that verifies every delivery's signature and records what it accepts,
// with a behaviour the test switches (fail, hang, ok). The deliverer's
// tests (package webhook) and the gateway's (package server) share it.
package webhooktest

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate/webhook"
)

// Modes of a Receiver.
const (
	// Fail answers 500.
	Fail = "fail"
	// Hang answers nothing until the client gives up.
	Hang = "hang"
	// OK verifies the signature and the body, then answers 204.
	OK = "ok"
)

// Delivery is one accepted request.
type Delivery struct {
	Event  webhook.Event
	Body   string
	Header http.Header
}

// Receiver is a webhook endpoint: URL is where deliveries go.
type Receiver struct {
	URL    string
	secret string

	mu         sync.Mutex
	mode       string
	bodies     map[string][]string
	deliveries []Delivery
	bad        int
	// requests gets one value per request, accepted or not; accepted
	// one per accepted delivery (both buffered).
	requests chan string
	accepted chan string
}

// New starts a Receiver for deliveries signed with secret, in mode; it is
// closed at the test's cleanup.
func New(t testing.TB, secret, mode string) *Receiver {
	t.Helper()
	r := &Receiver{secret: secret, mode: mode, bodies: map[string][]string{},
		requests: make(chan string, 10_000), accepted: make(chan string, 10_000)}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// SetMode switches how the following requests are answered.
func (r *Receiver) SetMode(m string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode = m
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	mode := r.mode
	r.mu.Unlock()
	r.requests <- mode
	switch mode {
	case Fail:
		http.Error(w, "down for maintenance", http.StatusInternalServerError)
		return
	case Hang:
		<-req.Context().Done() // the deliverer's timeout ends it
		return
	}
	if err := webhook.Verify(r.secret, req.Header.Get(webhook.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
		r.mu.Lock()
		r.bad++
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var ev webhook.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" || ev.ID != req.Header.Get("Leasegate-Event-Id") {
		http.Error(w, "bad event", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.bodies[ev.ID] = append(r.bodies[ev.ID], string(body))
	r.deliveries = append(r.deliveries, Delivery{Event: ev, Body: string(body), Header: req.Header.Clone()})
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	r.accepted <- ev.ID
}

// WaitRequests waits for n more requests, accepted or not.
func (r *Receiver) WaitRequests(t testing.TB, n int, what string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for i := 0; i < n; i++ {
		select {
		case <-r.requests:
		case <-deadline:
			t.Fatalf("%s: got %d of %d requests within 20s", what, i, n)
		}
	}
}

// WaitDelivered waits until every id in want was accepted at least once.
func (r *Receiver) WaitDelivered(t testing.TB, want map[string]bool, what string) {
	t.Helper()
	r.waitUntil(t, what, func() bool {
		for id := range want {
			if len(r.bodies[id]) == 0 {
				return false
			}
		}
		return true
	})
}

// WaitDelivery waits for the first accepted delivery whose event matches.
func (r *Receiver) WaitDelivery(t testing.TB, what string, match func(webhook.Event) bool) Delivery {
	t.Helper()
	var got Delivery
	r.waitUntil(t, what, func() bool {
		for _, d := range r.deliveries {
			if match(d.Event) {
				got = d
				return true
			}
		}
		return false
	})
	return got
}

// waitUntil waits until done (called with r.mu held) holds, woken by
// each accepted delivery.
func (r *Receiver) waitUntil(t testing.TB, what string, done func() bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		ok := done()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.accepted:
		case <-deadline:
			t.Fatalf("%s: not delivered within 30s", what)
		}
	}
}

// Bodies are the accepted bodies by event id, in arrival order.
func (r *Receiver) Bodies() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.bodies)
}

// Deliveries are the accepted deliveries, in arrival order.
func (r *Receiver) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Delivery(nil), r.deliveries...)
}

// BadSignatures is how many requests had a signature that did not verify.
func (r *Receiver) BadSignatures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bad
}
