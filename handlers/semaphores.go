package handlers

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// Counting semaphores (docs/semaphores.md): POST, GET and DELETE
// /semaphores/{name}, POST /semaphores/{name}/renew.

// permitJSON is PERMIT in the contract.
type permitJSON struct {
	Name       string `json:"name"`
	Owner      string `json:"owner"`
	Token      int64  `json:"token"`
	AcquiredAt string `json:"acquired_at"`
	ExpiresAt  string `json:"expires_at"`
}

func toPermitJSON(p leasegate.Permit) permitJSON {
	return permitJSON{
		Name: p.Name, Owner: p.Owner, Token: p.Token,
		AcquiredAt: leasegate.FormatTime(p.AcquiredAt),
		ExpiresAt:  leasegate.FormatTime(p.ExpiresAt),
	}
}

type semAcquiredJSON struct {
	Acquired bool       `json:"acquired"`
	Permit   permitJSON `json:"permit"`
	Holders  int        `json:"holders"`
	Limit    int        `json:"limit"`
}

type semContendedJSON struct {
	Acquired     bool  `json:"acquired"`
	Holders      int   `json:"holders"`
	Limit        int   `json:"limit"`
	RetryAfterMS int64 `json:"retry_after_ms"`
}

type semStateJSON struct {
	Name    string       `json:"name"`
	Limit   int          `json:"limit"`
	Holders []permitJSON `json:"holders"`
}

type permitHeldJSON struct {
	Permit permitJSON `json:"permit"`
}

// nameParam reads path parameter param and checks it with the rules of a
// lock's resource, naming param in the errors.
func nameParam(c echo.Context, ck *checker, param string) string {
	return checkedParam(c, ck, param, ck.resource)
}

func (a *API) semAcquire(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "ttl_seconds", "limit", "wait_ms")
	if err != nil {
		return err
	}
	var ck checker
	req := leasegate.SemaphoreRequest{Name: nameParam(c, &ck, "name")}
	req.Owner = ownerField(&ck, fields)
	req.TTL = a.ttlField(&ck, fields)
	limit, _ := ck.intField(fields, "limit", 1, leasegate.MaxSemaphoreLimit, true)
	req.Limit = int(limit)
	req.Wait = a.waitField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	var res leasegate.SemaphoreResult
	if req.Wait > 0 {
		a.m.SemWaiters.Inc()
		res, err = a.deps.Semaphores.Acquire(c.Request().Context(), tenantOf(c), req)
		a.m.SemWaiters.Dec()
		if err != nil && c.Request().Context().Err() != nil {
			a.m.SemAcquires.WithLabelValues("abandoned").Inc()
			return clientGone()
		}
	} else {
		ctx, cancel := a.opContext(c)
		res, err = a.deps.Semaphores.Acquire(ctx, tenantOf(c), req)
		cancel()
	}
	if errors.Is(err, leasegate.ErrLimitMismatch) {
		a.m.SemAcquires.WithLabelValues("limit_mismatch").Inc()
	}
	if err != nil {
		return err
	}
	a.m.SemHolders.Observe(float64(res.Holders))
	a.m.SemAcquires.WithLabelValues(acquireOutcome(res.Acquired, res.Waited)).Inc()
	if !res.Acquired {
		return sendJSON(c, http.StatusOK, semContendedJSON{
			Holders: res.Holders, Limit: res.Limit, RetryAfterMS: max(res.RetryAfter.Milliseconds(), 0),
		})
	}
	return sendJSON(c, http.StatusOK, semAcquiredJSON{Acquired: true, Permit: toPermitJSON(res.Permit), Holders: res.Holders, Limit: res.Limit})
}

func (a *API) semStatus(c echo.Context) error {
	var ck checker
	name := nameParam(c, &ck, "name")
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	st, err := a.deps.Semaphores.Status(ctx, tenantOf(c), name)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, semStateJSON{Name: st.Name, Limit: st.Limit, Holders: toJSONList(st.Holders, toPermitJSON)})
}

func (a *API) semRelease(c echo.Context) error {
	name, owner, token, err := a.parseRelease(c, "name")
	if err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.Semaphores.Release(ctx, tenantOf(c), name, owner, token)
	if err != nil {
		return err
	}
	a.m.SemReleases.WithLabelValues(res.String()).Inc()
	return releaseReply(c, res, leasegate.ErrSemaphoreNotHeld, leasegate.ErrSemaphoreForbidden)
}

func (a *API) semRenew(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "ttl_seconds")
	if err != nil {
		return err
	}
	var ck checker
	name := nameParam(c, &ck, "name")
	owner := ownerField(&ck, fields)
	ttl := a.ttlField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	p, err := a.deps.Semaphores.Renew(ctx, tenantOf(c), name, owner, ttl)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, permitHeldJSON{Permit: toPermitJSON(p)})
}
