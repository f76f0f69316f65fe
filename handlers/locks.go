package handlers

import (
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// The lock routes call the lock service with the request's own context,
// not one with a deadline of its own: context.WithTimeout costs a timer
// and three allocations per request. Each Redis call is bounded instead
// by the Redis client's read and write timeouts (server/redis.go), and
// with auto-pipelining by the batch's deadline (redislock.Batcher, one
// timer per pipeline); a waiting acquire bounds each of its calls itself
// (redislock.Service). docs/benchmarks.md has the figures.

// lockJSON is LOCK in the contract: the answers are written by
// jsonenc.go, and jsonenc_test.go checks them against these types.
type lockJSON struct {
	Resource   string `json:"resource"`
	Owner      string `json:"owner"`
	Token      int64  `json:"token"`
	AcquiredAt string `json:"acquired_at"`
	ExpiresAt  string `json:"expires_at"`
}

func toLockJSON(l leasegate.Lock) lockJSON {
	return lockJSON{
		Resource:   l.Resource,
		Owner:      l.Owner,
		Token:      l.Token,
		AcquiredAt: leasegate.FormatTime(l.AcquiredAt),
		ExpiresAt:  leasegate.FormatTime(l.ExpiresAt),
	}
}

type acquiredJSON struct {
	Acquired bool     `json:"acquired"`
	Lock     lockJSON `json:"lock"`
}

type contendedJSON struct {
	Acquired     bool   `json:"acquired"`
	Resource     string `json:"resource"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

type heldJSON struct {
	Lock lockJSON `json:"lock"`
}

func (a *API) maxTTLSeconds() int64 { return int64(a.cfg.MaxTTL / time.Second) }

// parseAcquire reads and validates POST /locks/{resource}.
func (a *API) parseAcquire(c echo.Context) (leasegate.AcquireRequest, error) {
	fields, err := a.readFields(c, "owner", "ttl_seconds", "wait_ms", "lock_delay_ms")
	if err != nil {
		return leasegate.AcquireRequest{}, err
	}
	var ck checker
	req := leasegate.AcquireRequest{Resource: nameParam(c, &ck, "resource")}
	req.Owner = ownerField(&ck, fields)
	req.TTL = a.ttlField(&ck, fields)
	req.Wait = a.waitField(&ck, fields)
	req.LockDelay = a.lockDelayField(&ck, fields)
	return req, ck.err()
}

func (a *API) acquire(c echo.Context) error {
	start := time.Now()
	req, err := a.parseAcquire(c)
	if err != nil {
		return err
	}
	var res leasegate.AcquireResult
	if req.Wait > 0 {
		// The service bounds each Redis call of a wait itself.
		a.m.Waiters.Inc()
		res, err = a.deps.Locks.Acquire(c.Request().Context(), tenantOf(c), req)
		a.m.Waiters.Dec()
		if err != nil && c.Request().Context().Err() != nil {
			// The client went away while waiting: it gets no answer, and
			// the log shows 499 (docs/waiting.md).
			a.m.AcquireOutcome("abandoned").Inc()
			return clientGone()
		}
	} else {
		res, err = a.deps.Locks.Acquire(c.Request().Context(), tenantOf(c), req)
	}
	if err != nil {
		return err
	}
	outcome := acquireOutcome(res.Acquired, res.Waited)
	a.m.AcquireOutcome(outcome).Inc()
	a.m.ObserveAcquire(req.Resource, outcome, time.Since(start))
	if !res.Acquired {
		if res.Delayed {
			a.m.LockDelayRefusals.WithLabelValues("lock").Inc()
		}
		return sendContended(c, req.Resource, max(res.RetryAfter.Milliseconds(), 0))
	}
	return sendAcquired(c, res.Lock)
}

// clientGone is logged (as 499) when the client went away while waiting.
func clientGone() *leasegate.Error {
	return leasegate.NewError(leasegate.CodeRequestTimeout, "the client went away while waiting for the lock")
}

func (a *API) status(c echo.Context) error {
	var ck checker
	resource := nameParam(c, &ck, "resource")
	if err := ck.err(); err != nil {
		return err
	}
	lk, err := a.deps.Locks.Status(c.Request().Context(), tenantOf(c), resource)
	if err != nil {
		return err
	}
	return sendHeld(c, lk)
}

func (a *API) release(c echo.Context) error {
	if raw := c.Request().URL.RawQuery; raw != "" && strings.Contains(raw, "force") {
		if q, err := url.ParseQuery(raw); err == nil && q.Get("force") == "true" {
			return a.forceRelease(c, q)
		}
	}
	resource, owner, token, err := a.parseRelease(c, "resource")
	if err != nil {
		return err
	}
	res, err := a.deps.Locks.Release(c.Request().Context(), tenantOf(c), resource, owner, token)
	if err != nil {
		return err
	}
	a.m.ReleaseResult(res.String()).Inc()
	return releaseReply(c, res, leasegate.ErrLockNotHeld, leasegate.ErrLockForbidden)
}

func (a *API) renew(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "ttl_seconds", "token")
	if err != nil {
		return err
	}
	var ck checker
	resource := nameParam(c, &ck, "resource")
	owner := ownerField(&ck, fields)
	ttl := a.ttlField(&ck, fields)
	token, _ := ck.intField(fields, "token", 1, 1<<62, false)
	if err := ck.err(); err != nil {
		return err
	}
	lk, err := a.deps.Locks.Renew(c.Request().Context(), tenantOf(c), resource, owner, token, ttl)
	switch {
	case errors.Is(err, leasegate.ErrLockNotHeld):
		a.m.RenewResult("not_found").Inc()
	case errors.Is(err, leasegate.ErrLockForbidden):
		a.m.RenewResult("forbidden").Inc()
	case err == nil:
		a.m.RenewResult("renewed").Inc()
	}
	if err != nil {
		return err
	}
	return sendHeld(c, lk)
}
