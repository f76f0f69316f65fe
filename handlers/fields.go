package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// The request body and the fields the JSON routes share (locks,
// semaphores, claims, user locks, the abuse review): one place reads each
// of them, so the routes answer alike.

// readFields reads the body (within the body limit) and decodes it as a
// JSON object with no members but allowed.
func (a *API) readFields(c echo.Context, allowed ...string) (map[string]json.RawMessage, error) {
	body, err := readBody(c, a.cfg.BodyLimit)
	if err != nil {
		return nil, err
	}
	return decodeObject(body, allowed...)
}

// noBody refuses a body on routes that take none (beyond an empty object).
func (a *API) noBody(c echo.Context) error {
	_, err := a.readFields(c)
	return err
}

// readFieldsAndQuery is readFields and then the query string of a DELETE.
// Not c.QueryParams(): it drops pairs that do not parse, so a garbled
// ?token= would turn a conditional release into an unconditional one.
func (a *API) readFieldsAndQuery(c echo.Context, allowed ...string) (map[string]json.RawMessage, url.Values, error) {
	fields, err := a.readFields(c, allowed...)
	if err != nil {
		return nil, nil, err
	}
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return nil, nil, leasegate.NewError(leasegate.CodeMalformed, "malformed query string: "+err.Error())
	}
	return fields, q, nil
}

// onlyQuery fails each query parameter that is not among allowed.
func onlyQuery(ck *checker, q url.Values, allowed ...string) {
	for k := range q {
		if !slices.Contains(allowed, k) {
			ck.fail(k, "unknown query parameter")
		}
	}
}

// ownerField reads the required owner member of the body.
func ownerField(ck *checker, fields map[string]json.RawMessage) string {
	if s, ok := ck.stringField(fields, "owner", true); ok {
		return ck.owner("owner", s)
	}
	return ""
}

// ttlField reads the required ttl_seconds member: 1 s up to MaxTTL.
func (a *API) ttlField(ck *checker, fields map[string]json.RawMessage) time.Duration {
	ttl, _ := ck.intField(fields, "ttl_seconds", 1, a.maxTTLSeconds(), true)
	return time.Duration(ttl) * time.Second
}

// waitField reads the optional wait_ms member: 0 (no wait) up to MaxWait.
func (a *API) waitField(ck *checker, fields map[string]json.RawMessage) time.Duration {
	wait, _ := ck.intField(fields, "wait_ms", 0, a.cfg.MaxWait.Milliseconds(), false)
	return time.Duration(wait) * time.Millisecond
}

// lockDelayField reads the optional lock_delay_ms member: 0 up to
// leasegate.MaxLockDelay; absent, DefaultLockDelay.
func (a *API) lockDelayField(ck *checker, fields map[string]json.RawMessage) time.Duration {
	if _, ok := fields["lock_delay_ms"]; !ok {
		return a.cfg.DefaultLockDelay
	}
	d, _ := ck.intField(fields, "lock_delay_ms", 0, leasegate.MaxLockDelay.Milliseconds(), false)
	return time.Duration(d) * time.Millisecond
}

// acquireOutcome labels an acquire (of a lock or a permit) for the
// metrics.
func acquireOutcome(acquired, waited bool) string {
	switch {
	case acquired && waited:
		return "waited"
	case acquired:
		return "acquired"
	case waited:
		return "timed_out"
	}
	return "contended"
}

// parseRelease reads the DELETE of a lock or a permit: the name in path
// parameter param, the owner and the optional token (JSON body or query).
func (a *API) parseRelease(c echo.Context, param string) (name, owner string, token int64, err error) {
	fields, q, err := a.readFieldsAndQuery(c, "owner", "token")
	if err != nil {
		return "", "", 0, err
	}
	var ck checker
	name = nameParam(c, &ck, param)
	onlyQuery(&ck, q, "owner", "token")
	owner = ownerFromBodyOrQuery(&ck, fields, q)
	token = tokenFromBodyOrQuery(&ck, fields, q)
	return name, owner, token, ck.err()
}

// releaseReply answers a release of a lock or a permit: 204, or the
// route's own not-held and forbidden errors.
func releaseReply(c echo.Context, res leasegate.ReleaseResult, notHeld, forbidden error) error {
	switch res {
	case leasegate.Released:
		return c.NoContent(http.StatusNoContent)
	case leasegate.NotFound:
		return notHeld
	case leasegate.Forbidden:
		return forbidden
	}
	return fmt.Errorf("handlers: unknown release result %v", res)
}

// ownerFromBodyOrQuery reads the owner of a DELETE from the JSON body or the
// query; both given and different (after trimming) is a 422.
func ownerFromBodyOrQuery(ck *checker, fields map[string]json.RawMessage, q url.Values) string {
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
