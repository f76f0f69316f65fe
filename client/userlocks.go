package client

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/leasegate/leasegate"
)

// UserLock is the answer to one user-lock attempt.
type UserLock struct {
	// Acquired is true only for the attempt that started the window.
	Acquired bool `json:"acquired"`
	// Attempts counts attempts in the current window.
	Attempts int64 `json:"attempts"`
	// Flagged: the user reached the lock's max_attempts in this window.
	Flagged   bool      `json:"flagged"`
	ExpiresAt time.Time `json:"expires_at"`
	// RateLimit is read from the RateLimit header fields: the lock's
	// max_attempts and window, the attempts left before the flag and the
	// time until the window ends.
	RateLimit RateLimit `json:"-"`
}

func userLockPath(name, userID string) string {
	return "/user-locks/" + url.PathEscape(name) + "/" + url.PathEscape(userID)
}

// UserLock makes one attempt on user lock name for userID. ttl 0 uses the
// gateway's default (10 s); otherwise it is sent in whole seconds. A
// banned user gets an *Error matching leasegate.ErrBanned, with RetryAfter
// and RateLimit.
func (c *Client) UserLock(ctx context.Context, name, userID string, ttl time.Duration) (UserLock, error) {
	var body any
	if ttl > 0 {
		body = map[string]int64{"ttl_seconds": int64(ttl / time.Second)}
	}
	var out UserLock
	_, h, err := c.doHeader(ctx, http.MethodPost, userLockPath(name, userID), body, &out)
	if err == nil {
		out.RateLimit, _ = ParseRateLimit(h)
	}
	return out, err
}

// ClearUserLock releases user lock name of userID;
// leasegate.ErrUserNotFound (and ErrNotFound) when there is none.
func (c *Client) ClearUserLock(ctx context.Context, name, userID string) error {
	_, err := c.do(ctx, http.MethodDelete, userLockPath(name, userID), nil, nil)
	return answerFor(err, leasegate.ErrUserNotFound)
}
