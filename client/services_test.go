package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/client"
)

// The behaviour of Locks, UserLocks and Flags is the contract
// (contract_test.go); these are the parts that only HTTP has.

func TestServicesRefuseATenantBeforeSendingAnything(t *testing.T) {
	t.Parallel()
	var count countingHandler
	count.next = http.NotFoundHandler()
	hs := httptest.NewServer(&count)
	t.Cleanup(hs.Close)
	c := client.New(hs.URL)
	ctx := context.Background()
	calls := map[string]error{}
	_, calls["Locks().Status"] = c.Locks().Status(ctx, "acme", "r")
	_, calls["UserLocks().Attempt"] = c.UserLocks().Attempt(ctx, "acme", "login", "u", time.Minute, leasegate.RequestMeta{})
	_, calls["Flags().List"] = c.Flags().List(ctx, "acme", leasegate.FlagQuery{})
	for name, err := range calls {
		if !errors.Is(err, client.ErrValidation) || leasegate.ErrorCode(err) != leasegate.CodeValidation {
			t.Errorf("%s: got %v, want a validation error", name, err)
		}
	}
	if n := count.n(); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

func TestServicesAnswerErrUnavailableWithoutAnAnswer(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	hs.Close() // nothing listens there now
	c := client.New(hs.URL, client.WithRetryPolicy(client.RetryPolicy{Attempts: 1}))
	ctx := context.Background()
	res, err := c.Locks().Acquire(ctx, "", leasegate.AcquireRequest{Resource: "r", Owner: "o", TTL: time.Minute})
	if !errors.Is(err, leasegate.ErrUnavailable) || res.Acquired {
		t.Errorf("Acquire: got %+v, %v; want ErrUnavailable", res, err)
	}
	if _, err := c.UserLocks().Attempt(ctx, "", "login", "u", time.Minute, leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrUnavailable) {
		t.Errorf("Attempt: got %v, want ErrUnavailable", err)
	}
	if err := c.Flags().Unban(ctx, "", "u", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrUnavailable) {
		t.Errorf("Unban: got %v, want ErrUnavailable", err)
	}
}

func TestServiceErrorsAreStillTheClientsErrors(t *testing.T) {
	t.Parallel()
	c := contractGateway(t, "redis://"+miniredis.RunT(t).Addr())
	ctx := context.Background()
	_, err := c.Locks().Status(ctx, "", "never")
	var ce *client.Error
	if !errors.Is(err, leasegate.ErrLockNotHeld) || !errors.Is(err, client.ErrNotFound) || !errors.As(err, &ce) || ce.Status != http.StatusNotFound {
		t.Errorf("got %#v, want a 404 *client.Error matching ErrLockNotHeld and ErrNotFound", err)
	}
	if errors.Is(err, leasegate.ErrUserNotFound) {
		t.Errorf("got %v matching ErrUserNotFound, want only the lock's sentinel", err)
	}
	if _, err := c.Flags().BanUser(ctx, "", "vip", time.Hour, "", leasegate.RequestMeta{}); !errors.Is(err, leasegate.ErrAllowlisted) || !errors.Is(err, client.ErrValidation) {
		t.Errorf("got %v, want ErrAllowlisted and ErrValidation", err)
	}
	if _, err := c.Flags().BanUser(ctx, "", "u", 1500*time.Millisecond, "", leasegate.RequestMeta{}); !errors.Is(err, client.ErrValidation) {
		t.Errorf("a ban of 1.5s: got %v, want ErrValidation (whole seconds only)", err)
	}
}

func TestARateLimitIsNoBan(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3")
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}))
	t.Cleanup(hs.Close)
	_, err := client.New(hs.URL).UserLocks().Attempt(context.Background(), "", "login", "u", time.Minute, leasegate.RequestMeta{})
	var be *leasegate.BannedError
	if !errors.Is(err, client.ErrRateLimited) || errors.As(err, &be) || errors.Is(err, leasegate.ErrBanned) {
		t.Errorf("got %v, want ErrRateLimited and no ban", err)
	}
	if e, _ := leasegate.ErrorOf(err); e.Code != leasegate.CodeRateLimited || e.RetryAfter != 3*time.Second {
		t.Errorf("got %+v, want rate-limited with retry after 3s", e)
	}
}
