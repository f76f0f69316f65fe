package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// Claims: work that must happen once (docs/claims.md): POST, GET and
// DELETE /claims/{scope}/{key}, POST /claims/{scope}/{key}/complete.

// claimJSON is CLAIM in the contract.
type claimJSON struct {
	Scope     string `json:"scope"`
	Key       string `json:"key"`
	Owner     string `json:"owner"`
	Token     int64  `json:"token"`
	ClaimedAt string `json:"claimed_at"`
	ExpiresAt string `json:"expires_at"`
}

type claimPendingJSON struct {
	State string    `json:"state"`
	Claim claimJSON `json:"claim"`
}

// maxReasonBytes bounds the reason of a forced removal.
const maxReasonBytes = 500

// claimParams reads and validates {scope} and {key}.
func claimParams(c echo.Context, ck *checker) (scope, key string) {
	return lockNameParam(c, ck, "scope"), nameParam(c, ck, "key")
}

// sendClaim writes the pending or done state. A done state carries the
// stored result byte for byte, so it is written by hand: encoding/json
// would compact a json.RawMessage.
func sendClaim(c echo.Context, status int, res leasegate.ClaimResult) error {
	if res.State == leasegate.ClaimPending {
		cl := res.Claim
		return sendJSON(c, status, claimPendingJSON{State: "pending", Claim: claimJSON{
			Scope: cl.Scope, Key: cl.Key, Owner: cl.Owner, Token: cl.Token,
			ClaimedAt: leasegate.FormatTime(cl.ClaimedAt), ExpiresAt: leasegate.FormatTime(cl.ExpiresAt),
		}})
	}
	result := res.Result
	if len(result) == 0 {
		result = []byte("null")
	}
	var b bytes.Buffer
	b.Grow(len(result) + 96)
	b.WriteString(`{"state":"done","result":`)
	b.Write(result)
	b.WriteString(`,"completed_at":"`)
	b.WriteString(leasegate.FormatTime(res.CompletedAt))
	b.WriteString(`","token":`)
	b.WriteString(strconv.FormatInt(res.Token, 10))
	b.WriteString("}\n")
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(b.Bytes())
	return err
}

func (a *API) claimStart(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "ttl_seconds")
	if err != nil {
		return err
	}
	var ck checker
	var req leasegate.ClaimRequest
	req.Scope, req.Key = claimParams(c, &ck)
	req.Owner = ownerField(&ck, fields)
	req.TTL = a.ttlField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.Claims.Claim(ctx, tenantOf(c), req)
	if errors.Is(err, leasegate.ErrClaimInProgress) {
		a.m.Claims.WithLabelValues("in_progress").Inc()
	}
	if err != nil {
		return err
	}
	status := http.StatusOK
	switch {
	case res.State == leasegate.ClaimDone:
		a.m.Claims.WithLabelValues("replayed").Inc()
	case res.Created:
		status = http.StatusCreated
		a.m.Claims.WithLabelValues("started").Inc()
		if res.Reclaimed {
			a.m.Claims.WithLabelValues("expired").Inc()
		}
	default:
		a.m.Claims.WithLabelValues("extended").Inc()
	}
	return sendClaim(c, status, res)
}

func (a *API) claimComplete(c echo.Context) error {
	fields, err := a.readFields(c, "owner", "token", "result", "keep_seconds")
	if err != nil {
		return err
	}
	var ck checker
	req := leasegate.CompleteRequest{Keep: leasegate.DefaultClaimKeep}
	req.Scope, req.Key = claimParams(c, &ck)
	req.Owner = ownerField(&ck, fields)
	req.Token, _ = ck.intField(fields, "token", 1, 1<<62, true)
	// decodeObject has checked that every member is one well-formed JSON
	// value; the result is kept as sent.
	switch raw, ok := fields["result"]; {
	case !ok:
		ck.fail("result", "is required")
	case len(raw) > leasegate.MaxClaimResult:
		ck.fail("result", "must be at most "+strconv.Itoa(leasegate.MaxClaimResult)+" bytes of JSON")
	default:
		req.Result = raw
	}
	if keep, present := ck.intField(fields, "keep_seconds", 1, int64(leasegate.MaxClaimKeep/time.Second), false); present {
		req.Keep = time.Duration(keep) * time.Second
	}
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.Claims.Complete(ctx, tenantOf(c), req)
	if err != nil {
		return err
	}
	if res.Replayed {
		a.m.Claims.WithLabelValues("replayed").Inc()
	} else {
		a.m.Claims.WithLabelValues("completed").Inc()
	}
	return sendClaim(c, http.StatusOK, res)
}

func (a *API) claimGet(c echo.Context) error {
	var ck checker
	scope, key := claimParams(c, &ck)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	res, err := a.deps.Claims.Get(ctx, tenantOf(c), scope, key)
	if err != nil {
		return err
	}
	return sendClaim(c, http.StatusOK, res)
}

// claimDelete abandons a pending claim (owner and token), or with
// ?force=true and a reason removes any claim: an ops key only, audited.
func (a *API) claimDelete(c echo.Context) error {
	fields, q, err := a.readFieldsAndQuery(c, "owner", "token", "reason")
	if err != nil {
		return err
	}
	var ck checker
	scope, key := claimParams(c, &ck)
	onlyQuery(&ck, q, "owner", "token", "force", "reason")
	force := false
	if fs, ok := q["force"]; ok {
		if len(fs) != 1 || (fs[0] != "true" && fs[0] != "false") {
			ck.fail("force", "must be true or false")
		}
		force = len(fs) == 1 && fs[0] == "true"
	}
	if force {
		if !Principal(c).Role.Allows(leasegate.RoleOps) {
			return leasegate.NewError(leasegate.CodeForbidden, "only an ops key may force the removal of a claim")
		}
		reason := claimReason(&ck, fields, q)
		if err := ck.err(); err != nil {
			return err
		}
		ctx, cancel := a.opContext(c)
		defer cancel()
		if _, err := a.deps.Claims.Remove(ctx, tenantOf(c), scope, key, reason, RequestMeta(c)); err != nil {
			return err
		}
		a.m.Claims.WithLabelValues("removed").Inc()
		return c.NoContent(http.StatusNoContent)
	}
	if _, ok := fields["reason"]; ok {
		ck.fail("reason", "only with ?force=true")
	}
	if _, ok := q["reason"]; ok {
		ck.fail("reason", "only with ?force=true")
	}
	owner := ownerFromBodyOrQuery(&ck, fields, q)
	token := tokenFromBodyOrQuery(&ck, fields, q)
	if token == 0 && len(ck.errs) == 0 {
		ck.fail("token", "is required")
	}
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	if err := a.deps.Claims.Abandon(ctx, tenantOf(c), scope, key, owner, token); err != nil {
		return err
	}
	a.m.Claims.WithLabelValues("abandoned").Inc()
	return c.NoContent(http.StatusNoContent)
}

// claimReason reads the reason of a forced removal from the body or the
// query: required, 1..maxReasonBytes bytes, no control characters.
func claimReason(ck *checker, fields map[string]json.RawMessage, q url.Values) string {
	reason, inBody := "", false
	if _, ok := fields["reason"]; ok {
		s, ok := ck.stringField(fields, "reason", false)
		if !ok {
			return ""
		}
		reason, inBody = s, true
	}
	if qs, ok := q["reason"]; ok {
		if len(qs) != 1 || (inBody && qs[0] != reason) {
			ck.fail("reason", "given more than once, or body and query disagree")
			return ""
		}
		reason = qs[0]
	}
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		ck.fail("reason", "is required with ?force=true (it is recorded in the audit log)")
	case len(reason) > maxReasonBytes:
		ck.fail("reason", "must be at most "+strconv.Itoa(maxReasonBytes)+" bytes")
	case hasControl(reason):
		ck.fail("reason", "must not contain control characters")
	}
	return reason
}
