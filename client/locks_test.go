package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

// The lease's behaviour (tokens, contention, renew, release, waiting) is
// the lock contract, run through c.Locks() in contract_test.go; this is
// what only the Client's own methods add.
func TestALeaseKeepsItsTTLAndTheSentinelsName404And403(t *testing.T) {
	t.Parallel()
	g := newMiniGateway(t)
	c := g.client()
	ctx := context.Background()

	lease, err := c.Acquire(ctx, "report/daily", 30*time.Second, client.WithOwner("node-a"))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	if lease.TTL != 30*time.Second {
		t.Fatalf("got TTL %v, want 30s", lease.TTL)
	}

	t.Run("renew with ttl 0 renews for the lease's TTL", func(t *testing.T) {
		renewed, err := c.Renew(ctx, lease, 0)
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		if renewed.TTL != lease.TTL || renewed.ExpiresAt.Sub(renewed.AcquiredAt) < lease.TTL {
			t.Fatalf("got %+v, want TTL %v and an expiry at least that after acquired_at", renewed, lease.TTL)
		}
	})

	t.Run("another owner's release is ErrForbidden", func(t *testing.T) {
		other := *lease
		other.Owner = "node-b"
		if err := c.Release(ctx, &other); !errors.Is(err, client.ErrForbidden) {
			t.Fatalf("got %v, want ErrForbidden", err)
		}
	})

	t.Run("after the release, release, status and renew are ErrNotFound", func(t *testing.T) {
		if err := c.Release(ctx, lease); err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := c.Release(ctx, lease); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("second release got %v, want ErrNotFound", err)
		}
		if _, err := c.Status(ctx, "report/daily"); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("status got %v, want ErrNotFound", err)
		}
		if _, err := c.Renew(ctx, lease, 0); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("renew got %v, want ErrNotFound", err)
		}
	})
}

func TestAcquireRejectsTTLThatIsNotWholeSeconds(t *testing.T) {
	t.Parallel()
	c := client.New("http://127.0.0.1:1")
	for _, ttl := range []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond} {
		if _, err := c.Acquire(context.Background(), "r", ttl); !errors.Is(err, client.ErrValidation) {
			t.Errorf("ttl %v: got %v, want ErrValidation", ttl, err)
		}
	}
}

// flakyGateway answers the first n requests with 503, then passes on.
type flakyGateway struct {
	mu   sync.Mutex
	n    int
	next http.Handler
}

func (f *flakyGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	fail := f.n > 0
	f.n--
	f.mu.Unlock()
	if fail {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"type":"https://leasegate.dev/problems/unavailable","title":"Service Unavailable","status":503,"detail":"x"}`))
		return
	}
	f.next.ServeHTTP(w, r)
}

func TestRetries(t *testing.T) {
	t.Parallel()
	fast := client.WithRetryPolicy(client.RetryPolicy{Attempts: 4, Base: time.Millisecond, Max: 5 * time.Millisecond})

	t.Run("acquire is retried after 503 and succeeds", func(t *testing.T) {
		g := newMiniGateway(t)
		f := &flakyGateway{n: 2, next: proxyTo(t, g.url)}
		hs := httptest.NewServer(f)
		t.Cleanup(hs.Close)
		lease, err := client.New(hs.URL, fast).Acquire(context.Background(), "job", time.Minute)
		if err != nil || lease.Token <= 0 {
			t.Fatalf("got %+v, %v; want acquired on the third try", lease, err)
		}
	})

	t.Run("gives up after the policy's attempts with the last error", func(t *testing.T) {
		f := &flakyGateway{n: 100}
		hs := httptest.NewServer(f)
		t.Cleanup(hs.Close)
		_, err := client.New(hs.URL, fast).Acquire(context.Background(), "job", time.Minute)
		if !errors.Is(err, leasegate.ErrUnavailable) {
			t.Fatalf("got %v, want leasegate.ErrUnavailable", err)
		}
		if got := 100 - f.n; got != 4 {
			t.Errorf("got %d attempts, want 4", got)
		}
	})

	t.Run("a definite answer is never retried", func(t *testing.T) {
		g := newMiniGateway(t)
		c := g.client()
		if _, err := c.Acquire(context.Background(), "job", time.Minute); err != nil {
			t.Fatal(err)
		}
		var count countingHandler
		count.next = proxyTo(t, g.url)
		hs := httptest.NewServer(&count)
		t.Cleanup(hs.Close)
		_, err := client.New(hs.URL, fast).Acquire(context.Background(), "job", time.Minute)
		if !errors.Is(err, client.ErrNotAcquired) || count.n() != 1 {
			t.Fatalf("got %v after %d requests, want ErrNotAcquired after 1", err, count.n())
		}
		_, err = client.New(hs.URL, fast).Acquire(context.Background(), "", time.Minute)
		if err == nil || count.n() != 2 {
			t.Fatalf("got %v after %d requests, want one refused request", err, count.n())
		}
	})
}

type countingHandler struct {
	mu    sync.Mutex
	count int
	next  http.Handler
}

func (c *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.count++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

func (c *countingHandler) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// lossyProxy forwards every request to the gateway, but for the first n
// the gateway's answer never reaches the client: the gateway acts, and the
// client instead sees lose's doing.
type lossyProxy struct {
	mu   sync.Mutex
	n    int
	next http.Handler
	// lose fails the request towards the client; nil drops the connection
	// without an answer.
	lose func(w http.ResponseWriter)
}

func (p *lossyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	drop := p.n > 0
	p.n--
	p.mu.Unlock()
	if !drop {
		p.next.ServeHTTP(w, r)
		return
	}
	p.next.ServeHTTP(httptest.NewRecorder(), r)
	if p.lose != nil {
		p.lose(w)
		return
	}
	panic(http.ErrAbortHandler) // closes the connection without an answer
}

// lateAnswer is what a proxy sends when the upstream answer comes too
// late (504): the request took effect, the caller cannot tell.
func lateAnswer(w http.ResponseWriter) {
	http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
}

func TestLostAnswersAreRetriedSafely(t *testing.T) {
	t.Parallel()
	fast := client.WithRetryPolicy(client.RetryPolicy{Attempts: 3, Base: time.Millisecond, Max: 5 * time.Millisecond})
	g := newMiniGateway(t)
	direct := g.client()
	ctx := context.Background()

	t.Run("an acquire whose answer was lost returns the lease it took, once", func(t *testing.T) {
		p := &lossyProxy{n: 1, next: proxyTo(t, g.url)}
		hs := httptest.NewServer(p)
		t.Cleanup(hs.Close)
		lease, err := client.New(hs.URL, fast).Acquire(ctx, "lost-acquire", time.Minute)
		if err != nil {
			t.Fatalf("acquire: %v", err)
		}
		st, err := direct.Status(ctx, "lost-acquire")
		if err != nil || st.Owner != lease.Owner || st.Token != lease.Token {
			t.Fatalf("got status %+v, %v; want the lease the caller got (%s, token %d)", st, err, lease.Owner, lease.Token)
		}
	})

	for _, tc := range []struct {
		name, resource string
		lose           func(w http.ResponseWriter)
	}{
		{"a release whose answer was lost reports success", "lost-release", nil},
		{"a release whose answer a proxy turned into a 504 reports success", "timed-out-release", lateAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lease, err := direct.Acquire(ctx, tc.resource, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			p := &lossyProxy{n: 1, next: proxyTo(t, g.url), lose: tc.lose}
			hs := httptest.NewServer(p)
			t.Cleanup(hs.Close)
			if err := client.New(hs.URL, fast).Release(ctx, lease); err != nil {
				t.Fatalf("got %v, want nil (the first attempt released it)", err)
			}
			if _, err := direct.Status(ctx, tc.resource); !errors.Is(err, client.ErrNotFound) {
				t.Fatalf("status got %v, want ErrNotFound", err)
			}
		})
	}
}
