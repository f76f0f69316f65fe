package handlers

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// Lock sets: POST /locks and DELETE /locks (docs/lock-sets.md).

// resourcesField reads the required resources member: a JSON array of
// 1..MaxLockSet distinct strings, each with the resource rules. Errors
// name the member ("resources") or the element ("resources[2]").
func resourcesField(ck *checker, fields map[string]json.RawMessage) []string {
	raw, ok := fields["resources"]
	if !ok {
		ck.fail("resources", "is required")
		return nil
	}
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &elems) != nil {
		ck.fail("resources", "must be an array of resource names")
		return nil
	}
	if len(elems) == 0 || len(elems) > leasegate.MaxLockSet {
		ck.fail("resources", "must name 1 to "+strconv.Itoa(leasegate.MaxLockSet)+" resources")
		return nil
	}
	out := make([]string, 0, len(elems))
	seen := make(map[string]struct{}, len(elems))
	before := len(ck.errs)
	for i, e := range elems {
		field := "resources[" + strconv.Itoa(i) + "]"
		if len(e) < 2 || e[0] != '"' {
			ck.fail(field, "must be a string")
			continue
		}
		s, ok := unquote(e)
		if !ok {
			ck.fail(field, `must not contain a lone UTF-16 surrogate escape (\ud800 to \udfff without its pair)`)
			continue
		}
		ck.resource(field, s)
		if _, dup := seen[s]; dup {
			ck.fail(field, "names a resource already in the set")
		}
		seen[s] = struct{}{}
		out = append(out, s)
	}
	if len(ck.errs) > before {
		return nil
	}
	return out
}

func (a *API) acquireSet(c echo.Context) error {
	start := time.Now()
	fields, err := a.readFields(c, "resources", "owner", "ttl_seconds", "wait_ms", "lock_delay_ms")
	if err != nil {
		return err
	}
	var ck checker
	req := leasegate.LockSetRequest{Resources: resourcesField(&ck, fields)}
	req.Owner = ownerField(&ck, fields)
	req.TTL = a.ttlField(&ck, fields)
	req.Wait = a.waitField(&ck, fields)
	req.LockDelay = a.lockDelayField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	var res leasegate.LockSetResult
	if req.Wait > 0 {
		a.m.Waiters.Inc()
		res, err = a.deps.LockSets.AcquireSet(c.Request().Context(), tenantOf(c), req)
		a.m.Waiters.Dec()
		if err != nil && c.Request().Context().Err() != nil {
			a.m.AcquireOutcome("abandoned").Inc()
			return clientGone()
		}
	} else {
		res, err = a.deps.LockSets.AcquireSet(c.Request().Context(), tenantOf(c), req)
	}
	if err != nil {
		return err
	}
	outcome := acquireOutcome(res.Acquired, res.Waited)
	a.m.AcquireOutcome(outcome).Inc()
	a.m.ObserveAcquire(req.Resources[0], outcome, time.Since(start))
	if !res.Acquired {
		for _, h := range res.Held {
			if h.Delayed {
				a.m.LockDelayRefusals.WithLabelValues("lock_set").Inc()
				break
			}
		}
		return sendSetRefused(c, res.Held)
	}
	return sendSetAcquired(c, res.Locks)
}

func (a *API) releaseSet(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "resources")
	if err != nil {
		return err
	}
	var ck checker
	resources := resourcesField(&ck, fields)
	owner := ownerField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	res, err := a.deps.LockSets.ReleaseSet(c.Request().Context(), tenantOf(c), owner, resources)
	if err != nil {
		return err
	}
	for range res.Released {
		a.m.ReleaseResult(leasegate.Released.String()).Inc()
	}
	return sendSetReleased(c, res)
}

// sendSetAcquired writes {"acquired":true,"locks":[LOCK...]}.
func sendSetAcquired(c echo.Context, locks []leasegate.Lock) error {
	buf := getBuf()
	b := append(buf.b, `{"acquired":true,"locks":[`...)
	for i, l := range locks {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLock(b, l)
	}
	b = append(b, "]}\n"...)
	return sendPooled(c, buf, b)
}

// sendSetRefused writes {"acquired":false,"held":[{"resource","retry_after_ms"}...]}.
func sendSetRefused(c echo.Context, held []leasegate.HeldMember) error {
	buf := getBuf()
	b := append(buf.b, `{"acquired":false,"held":[`...)
	for i, h := range held {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"resource":`...)
		b = appendString(b, h.Resource)
		b = append(b, `,"retry_after_ms":`...)
		b = strconv.AppendInt(b, max(h.RetryAfter.Milliseconds(), 0), 10)
		b = append(b, '}')
	}
	b = append(b, "]}\n"...)
	return sendPooled(c, buf, b)
}

// sendSetReleased writes {"released":[R...],"not_held":[R...]}.
func sendSetReleased(c echo.Context, r leasegate.LockSetRelease) error {
	buf := getBuf()
	b := append(buf.b, `{"released":`...)
	b = appendStrings(b, r.Released)
	b = append(b, `,"not_held":`...)
	b = appendStrings(b, r.NotHeld)
	b = append(b, "}\n"...)
	return sendPooled(c, buf, b)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}
