package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// defaultUserLockTTL is the contract's default ttl_seconds of a user lock.
const defaultUserLockTTL = 10

type userLockJSON struct {
	Acquired  bool   `json:"acquired"`
	Attempts  int64  `json:"attempts"`
	Flagged   bool   `json:"flagged"`
	ExpiresAt string `json:"expires_at"`
}

// lockName validates a user lock's name: 1..64 bytes of [A-Za-z0-9._-].
func (c *checker) lockName(field, s string) {
	if !leasegate.UserLockName.MatchString(s) {
		c.fail(field, "must be 1 to 64 characters of A-Z a-z 0-9 . _ -")
	}
}

// userID validates a user id: 1..128 bytes of UTF-8, no control
// characters, not only whitespace. It is used as given (not trimmed).
func (c *checker) userID(s string) {
	if s == "" {
		c.fail("user_id", "must not be empty")
		return
	}
	if c.text("user_id", s, 128) && strings.TrimSpace(s) == "" {
		c.fail("user_id", "must not be only whitespace")
	}
}

// userIDParam reads and validates the {user_id} path segment.
func userIDParam(c echo.Context, ck *checker) string {
	return checkedParam(c, ck, "user_id", func(_, v string) { ck.userID(v) })
}

// lockNameParam reads path parameter param and checks it with the rules
// of a user lock's name (a claim's scope follows them too).
func lockNameParam(c echo.Context, ck *checker, param string) string {
	return checkedParam(c, ck, param, ck.lockName)
}

// userLockParams reads {name} and {user_id}.
func userLockParams(c echo.Context, ck *checker) (name, user string) {
	return lockNameParam(c, ck, "name"), userIDParam(c, ck)
}

func (a *API) userLockAttempt(c echo.Context) error {
	fields, err := a.readFields(c, "ttl_seconds")
	if err != nil {
		return err
	}
	var ck checker
	name, user := userLockParams(c, &ck)
	onlyQuery(&ck, c.QueryParams())
	ttl, present := ck.intField(fields, "ttl_seconds", 1, a.maxTTLSeconds(), false)
	if !present {
		ttl = defaultUserLockTTL
	}
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.UserLocks.Attempt(ctx, tenantOf(c), name, user, time.Duration(ttl)*time.Second, RequestMeta(c))
	if err != nil {
		var be *leasegate.BannedError
		if errors.As(err, &be) {
			setRateLimit(c.Response().Header(), be.RateLimit)
		}
		return err
	}
	setRateLimit(c.Response().Header(), res.RateLimit)
	return sendJSON(c, http.StatusOK, userLockJSON{
		Acquired:  res.Acquired,
		Attempts:  res.Attempts,
		Flagged:   res.Flagged,
		ExpiresAt: leasegate.FormatTime(res.ExpiresAt),
	})
}

func (a *API) userLockClear(c echo.Context) error {
	if err := a.noBody(c); err != nil {
		return err
	}
	var ck checker
	name, user := userLockParams(c, &ck)
	onlyQuery(&ck, c.QueryParams())
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	if err := a.deps.UserLocks.Clear(ctx, tenantOf(c), name, user); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// setRateLimit writes the IETF RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers-10, structured fields, RFC 9651):
//
//	RateLimit-Policy: "<lock>";q=<max_attempts>;w=<window seconds>
//	RateLimit: "<lock>";r=<attempts left before the flag>;t=<seconds to reset>
//
// Lock names are [A-Za-z0-9._-], so they need no escaping in an sf-string.
// Seconds are rounded up: a client that waits t seconds finds the window
// (or the ban) over.
func setRateLimit(h http.Header, rl leasegate.RateLimit) {
	if rl.IsZero() {
		return
	}
	id := strconv.Quote(rl.Policy)
	h.Set("RateLimit-Policy", id+";q="+strconv.FormatInt(rl.Quota, 10)+";w="+strconv.FormatInt(ceilSeconds(rl.Window), 10))
	h.Set("RateLimit", id+";r="+strconv.FormatInt(max(rl.Remaining, 0), 10)+";t="+strconv.FormatInt(ceilSeconds(rl.Reset), 10))
}

// ceilSeconds is d in whole seconds, rounded up, never negative.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
