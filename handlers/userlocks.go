package handlers

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

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
	switch {
	case s == "":
		c.fail("user_id", "must not be empty")
	case len(s) > 128:
		c.fail("user_id", "must be at most 128 bytes")
	case !utf8.ValidString(s):
		c.fail("user_id", "must be valid UTF-8")
	case hasControl(s):
		c.fail("user_id", "must not contain control characters")
	case strings.TrimSpace(s) == "":
		c.fail("user_id", "must not be only whitespace")
	}
}

// userIDParam reads and validates the {user_id} path segment.
func userIDParam(c echo.Context, ck *checker) string {
	u, err := pathParam(c, "user_id")
	if err != nil {
		ck.fail("user_id", "bad percent-encoding")
		return ""
	}
	ck.userID(u)
	return u
}

// userLockParams reads {name} and {user_id}.
func userLockParams(c echo.Context, ck *checker) (name, user string) {
	name, err := pathParam(c, "name")
	if err != nil {
		ck.fail("name", "bad percent-encoding")
	} else {
		ck.lockName("name", name)
	}
	return name, userIDParam(c, ck)
}

// noQuery records every query parameter as unknown.
func noQuery(c echo.Context, ck *checker, allowed ...string) {
	for k := range c.QueryParams() {
		if !contains(allowed, k) {
			ck.fail(k, "unknown query parameter")
		}
	}
}

func (a *API) userLockAttempt(c echo.Context) error {
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return err
	}
	fields, err := decodeObject(body, "ttl_seconds")
	if err != nil {
		return err
	}
	var ck checker
	name, user := userLockParams(c, &ck)
	noQuery(c, &ck)
	ttl, present := ck.intField(fields, "ttl_seconds", 1, a.maxTTLSeconds(), false)
	if !present {
		ttl = defaultUserLockTTL
	}
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.UserLocks.Attempt(ctx, tenantOf(c), name, user, time.Duration(ttl)*time.Second, requestMeta(c))
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, userLockJSON{
		Acquired:  res.Acquired,
		Attempts:  res.Attempts,
		Flagged:   res.Flagged,
		ExpiresAt: leasegate.FormatTime(res.ExpiresAt),
	})
}

func (a *API) userLockClear(c echo.Context) error {
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return err
	}
	if _, err := decodeObject(body); err != nil {
		return err
	}
	var ck checker
	name, user := userLockParams(c, &ck)
	noQuery(c, &ck)
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
