// Package leasegate is the domain of the leasegate lock gateway: its
// vocabulary (locks, user locks, flags, bans, who is calling) and the
// service interfaces that the HTTP layer calls. It imports nothing of the
// project, and every other package points down to it:
//
//	cmd/leasegate, server      wire everything together
//	handlers, client           speak the domain over HTTP (server side, client side)
//	auth                       decides the Principal of a request; ops-page sessions
//	redislock, abuse           implement the services over Redis (keyspace, scripts)
//	leasegate (this package)   types, error codes, service interfaces
//
// See docs/architecture.md.
package leasegate

import "time"

// Role is what an API key may do.
type Role string

// Roles. RoleOps may do everything RoleClient may, and also the operator
// routes (the ops review, /ops/, /metrics unless it is public).
const (
	RoleClient Role = "client"
	RoleOps    Role = "ops"
)

// Valid reports whether r is one of the roles above.
func (r Role) Valid() bool { return r == RoleClient || r == RoleOps }

// Allows reports whether a caller with role r may use a route that needs
// want. The zero Role allows nothing: authentication never fails open.
func (r Role) Allows(want Role) bool {
	return r.Valid() && (r == want || r == RoleOps)
}

// OpenModeActor names the actor of operator actions when no API key named
// one (open mode, development). Client-sent headers are never used for it.
const OpenModeActor = "open"

// Principal is who a request acts as: an API key's tenant, role and name.
// In open mode it is an operator of tenant "" with no key name.
type Principal struct {
	// Tenant is the namespace of everything the caller touches.
	Tenant string
	// Role bounds the routes the caller may use.
	Role Role
	// KeyName names the API key ("" in open mode), for audit records.
	KeyName string
}

// OpenMode is the Principal of every request when no keys are configured.
var OpenMode = Principal{Tenant: "", Role: RoleOps}

// Actor names the principal in audit records.
func (p Principal) Actor() string {
	if p.KeyName == "" {
		return OpenModeActor
	}
	return p.KeyName
}

// RequestMeta is what audit and abuse records say about the request
// behind an operation.
type RequestMeta struct {
	ClientIP  string
	RequestID string
	// Operator names who did an operator action (Principal.Actor).
	Operator string
}

// TimeFormat is how every timestamp leaves the gateway: RFC 3339 UTC with
// millisecond precision.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t in TimeFormat, in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }
