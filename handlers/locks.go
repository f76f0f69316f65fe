package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
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

// resourceParam reads and validates the {resource} path segment.
func resourceParam(c echo.Context, ck *checker) string {
	r, err := pathParam(c, "resource")
	if err != nil {
		ck.fail("resource", "bad percent-encoding")
		return ""
	}
	ck.resource(r)
	return r
}

func (a *API) maxTTLSeconds() int64 { return int64(a.cfg.MaxTTL / time.Second) }

// acquireRequest is a validated POST /locks/{resource}.
type acquireRequest struct {
	resource string
	owner    string
	ttl      time.Duration
	wait     time.Duration
}

func (a *API) parseAcquire(c echo.Context) (acquireRequest, error) {
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return acquireRequest{}, err
	}
	fields, err := decodeObject(body, "owner", "ttl_seconds", "wait_ms")
	if err != nil {
		return acquireRequest{}, err
	}
	var ck checker
	var req acquireRequest
	req.resource = resourceParam(c, &ck)
	if s, ok := ck.stringField(fields, "owner", true); ok {
		req.owner = ck.owner("owner", s)
	}
	ttl, _ := ck.intField(fields, "ttl_seconds", 1, a.maxTTLSeconds(), true)
	req.ttl = time.Duration(ttl) * time.Second
	wait, _ := ck.intField(fields, "wait_ms", 0, a.cfg.MaxWait.Milliseconds(), false)
	req.wait = time.Duration(wait) * time.Millisecond
	return req, ck.err()
}

func (a *API) acquire(c echo.Context) error {
	start := time.Now()
	req, err := a.parseAcquire(c)
	if err != nil {
		return err
	}
	ar := leasegate.AcquireRequest{Resource: req.resource, Owner: req.owner, TTL: req.ttl, Wait: req.wait}
	var res leasegate.AcquireResult
	if req.wait > 0 {
		// The service bounds each Redis call of a wait itself.
		a.m.Waiters.Inc()
		res, err = a.deps.Locks.Acquire(c.Request().Context(), tenantOf(c), ar)
		a.m.Waiters.Dec()
		if err != nil && c.Request().Context().Err() != nil {
			// The client went away while waiting: it gets no answer, and
			// the log shows 499 (docs/waiting.md).
			a.m.AcquireOutcome("abandoned").Inc()
			return clientGone()
		}
	} else {
		res, err = a.deps.Locks.Acquire(c.Request().Context(), tenantOf(c), ar)
	}
	if err != nil {
		return err
	}
	if !res.Acquired {
		outcome := "contended"
		if res.Waited {
			outcome = "timed_out"
		}
		a.m.AcquireOutcome(outcome).Inc()
		a.m.ObserveAcquire(req.resource, outcome, time.Since(start))
		return sendContended(c, req.resource, max(res.RetryAfter.Milliseconds(), 0))
	}
	outcome := "acquired"
	if res.Waited {
		outcome = "waited"
	}
	a.m.AcquireOutcome(outcome).Inc()
	a.m.ObserveAcquire(req.resource, outcome, time.Since(start))
	return sendAcquired(c, res.Lock)
}

// clientGone is logged (as 499) when the client went away while waiting.
func clientGone() *leasegate.Error {
	return problem(leasegate.CodeRequestTimeout, "the client went away while waiting for the lock")
}

func (a *API) status(c echo.Context) error {
	var ck checker
	resource := resourceParam(c, &ck)
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
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return err
	}
	fields, err := decodeObject(body, "owner", "token")
	if err != nil {
		return err
	}
	// Not c.QueryParams(): it drops pairs that do not parse, so a garbled
	// ?token= would turn a conditional release into an unconditional one.
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return problem(leasegate.CodeMalformed, "malformed query string: "+err.Error())
	}
	var ck checker
	resource := resourceParam(c, &ck)
	for k := range q {
		if k != "owner" && k != "token" {
			ck.fail(k, "unknown query parameter")
		}
	}
	owner := a.ownerFromBodyOrQuery(&ck, fields, q)
	token := tokenFromBodyOrQuery(&ck, fields, q)
	if err := ck.err(); err != nil {
		return err
	}
	res, err := a.deps.Locks.Release(c.Request().Context(), tenantOf(c), resource, owner, token)
	if err != nil {
		return err
	}
	a.m.ReleaseResult(res.String()).Inc()
	switch res {
	case leasegate.Released:
		return c.NoContent(http.StatusNoContent)
	case leasegate.NotFound:
		return leasegate.ErrLockNotHeld
	case leasegate.Forbidden:
		return leasegate.ErrLockForbidden
	}
	return fmt.Errorf("handlers: unknown release result %v", res)
}

// ownerFromBodyOrQuery reads the owner of a DELETE from the JSON body or the
// query; both given and different (after trimming) is a 422.
func (a *API) ownerFromBodyOrQuery(ck *checker, fields map[string]json.RawMessage, q url.Values) string {
	if _, present := fields["owner"]; present {
		bodyOwner, ok := ck.stringField(fields, "owner", false)
		if !ok {
			return ""
		}
		if qs, inQuery := q["owner"]; inQuery && (len(qs) != 1 || strings.TrimSpace(qs[0]) != strings.TrimSpace(bodyOwner)) {
			ck.fail("owner", "body and query disagree")
			return ""
		}
		return ck.owner("owner", bodyOwner)
	}
	qs, inQuery := q["owner"]
	if inQuery && len(qs) != 1 {
		ck.fail("owner", "given more than once in the query")
		return ""
	}
	if !inQuery {
		ck.fail("owner", "is required (JSON body or ?owner=)")
		return ""
	}
	return ck.owner("owner", qs[0])
}

// tokenFromBodyOrQuery reads the optional token of a DELETE (0 = none).
func tokenFromBodyOrQuery(ck *checker, fields map[string]json.RawMessage, q url.Values) int64 {
	bodyTok, inBody := ck.intField(fields, "token", 1, 1<<62, false)
	qs, inQuery := q["token"]
	if !inQuery {
		return bodyTok
	}
	if len(qs) != 1 {
		ck.fail("token", "given more than once in the query")
		return 0
	}
	qTok, err := strconv.ParseInt(qs[0], 10, 64)
	if err != nil || qTok < 1 || !isIntLiteral(qs[0]) {
		ck.fail("token", "must be a positive integer")
		return 0
	}
	if inBody && bodyTok != qTok {
		ck.fail("token", "body and query disagree")
		return 0
	}
	return qTok
}

func (a *API) renew(c echo.Context) error {
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return err
	}
	fields, err := decodeObject(body, "owner", "ttl_seconds", "token")
	if err != nil {
		return err
	}
	var ck checker
	resource := resourceParam(c, &ck)
	owner := ""
	if s, ok := ck.stringField(fields, "owner", true); ok {
		owner = ck.owner("owner", s)
	}
	ttl, _ := ck.intField(fields, "ttl_seconds", 1, a.maxTTLSeconds(), true)
	token, _ := ck.intField(fields, "token", 1, 1<<62, false)
	if err := ck.err(); err != nil {
		return err
	}
	lk, err := a.deps.Locks.Renew(c.Request().Context(), tenantOf(c), resource, owner, token, time.Duration(ttl)*time.Second)
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
