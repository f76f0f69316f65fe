package handlers

import (
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// The routes' input rules, for the ops page's forms (package opsui): a
// form is held to the same rules as the JSON route that does the same
// thing.

// CheckFlagQuery reads ?lock=&limit=&cursor= as GET /abuse/flagged does;
// the query names in extra are let through unchecked.
func CheckFlagQuery(c echo.Context, extra ...string) (leasegate.FlagQuery, error) {
	var ck checker
	q := listQuery(c, &ck, extra...)
	return q, ck.err()
}

// CheckUserID holds s to the rule of a {user_id}.
func CheckUserID(s string) error {
	var ck checker
	ck.userID(s)
	return ck.err()
}

// CheckBan reads a ban's length, given as text (whole seconds up to
// leasegate.MaxBan), and holds its reason to the rule of POST
// /abuse/bans/{user_id}.
func CheckBan(seconds, reason string) (time.Duration, error) {
	var ck checker
	n, err := strconv.ParseInt(seconds, 10, 64)
	if err != nil || !isIntLiteral(seconds) || n < 1 || n > int64(leasegate.MaxBan/time.Second) {
		ck.fail("seconds", "must be a whole number of seconds up to a year")
	}
	ck.banReason(reason)
	return time.Duration(n) * time.Second, ck.err()
}

// CheckForceRelease holds a forced release's resource and reason (already
// trimmed) to the rules of the routes: a resource as every lock route
// takes it, and a reason of at most maxReasonBytes without control
// characters, as a forced removal takes it.
func CheckForceRelease(resource, reason string) error {
	var ck checker
	ck.resource("resource", resource)
	if reason == "" || len(reason) > maxReasonBytes || hasControl(reason) {
		ck.fail("reason", "is required, at most 500 bytes")
	}
	return ck.err()
}

// CheckListPosition holds a listing's prefix and cursor to what a query
// value may be: at most 255 bytes, no control characters.
func CheckListPosition(prefix, cursor string) error {
	if len(prefix) > 255 || hasControl(prefix) || len(cursor) > 255 || hasControl(cursor) {
		return errors.New("handlers: a prefix or cursor of more than 255 bytes or with control characters")
	}
	return nil
}
