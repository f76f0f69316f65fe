package abuse

import (
	"github.com/leasegate/leasegate/redislock"
)

// Key layout (docs/abuse.md). Every key of one (tenant, user) shares the
// hash tag redislock.HashTag(tenant, "user:"+userID) -- escaped, so no
// user id can end the tag or pick its Cluster slot -- and each script or
// MULTI touches only keys of one user:
//
//	<prefix><utag>:ul:<lock>    hash  n, start, exp      the user lock counter (PEXPIREAT exp)
//	<prefix><utag>:flag:<lock>  hash  the flag record    (PEXPIRE flag retention)
//	<prefix><utag>:flags        set   lock names with a flag record
//	<prefix><utag>:ban          hash  until, reason, by, source, lock, created (PEXPIREAT until)
//
// Lock names are [A-Za-z0-9._-] so they need no escaping after the tag.
// The suffixes differ from the lock engine's (:lock, :fence), so a resource
// lock named "user:<id>" shares the slot but never a key.
//
// The cross-user indexes of a tenant, sorted sets of "<lock>:<user id>"
// scored by last_flagged_at in ms, live under their own tags:
//
//	<prefix>{t=<tenant>;r=abuse%3Aindex}:flagged          every lock
//	<prefix>{t=<tenant>;r=abuse%3Aindex%3A<lock>}:flagged  one lock
type userKeys struct{ base string }

func (s *Service) userKeys(tenant, userID string) userKeys {
	return userKeys{base: s.opts.Prefix + redislock.HashTag(tenant, "user:"+userID)}
}

func (k userKeys) counter(lock string) string { return k.base + ":ul:" + lock }
func (k userKeys) flag(lock string) string    { return k.base + ":flag:" + lock }
func (k userKeys) flagSet() string            { return k.base + ":flags" }
func (k userKeys) ban() string                { return k.base + ":ban" }

// indexKey is the tenant's index of flags on lock, or on every lock when
// lock is "".
func (s *Service) indexKey(tenant, lock string) string {
	name := "abuse:index"
	if lock != "" {
		name += ":" + lock
	}
	return s.opts.Prefix + redislock.HashTag(tenant, name) + ":flagged"
}

// indexMember names a flag in an index. Lock names contain no ':', so the
// first ':' splits it unambiguously.
func indexMember(lock, userID string) string { return lock + ":" + userID }
