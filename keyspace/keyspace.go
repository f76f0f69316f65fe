// Package keyspace is leasegate's Redis key layout, the one place that
// names keys: the prefix, the tenant, the hash tag and its escaping, and
// the keys of the lock engine (redislock) and of abuse control (abuse).
// It imports nothing of leasegate; docs/keys.md and docs/abuse.md describe
// the layout, and keyspace_test.go pins it byte for byte, because stored
// data of running deployments lives under these names.
//
// Every key is
//
//	<prefix>{t=<tenant>;r=<name>}<suffix>
//
// where the braces are the Redis Cluster hash tag (HashTag), <name> is a
// lock resource or one of abuse's names ("user:<id>", "abuse:index",
// "abuse:index:<lock>"), and <suffix> says what the key holds:
//
//	<prefix>{t=<tenant>;r=<resource>}:lock                     hash    a live lease
//	<prefix>{t=<tenant>;r=<resource>}:fence                    string  the last fencing token
//	<prefix>{t=<tenant>;r=<resource>}:waiters                  hash    the acquires that wait
//	<prefix>{t=<tenant>;r=user%3A<id>}:ul:<lock>               hash    a user lock counter
//	<prefix>{t=<tenant>;r=user%3A<id>}:flag:<lock>             hash    a flag record
//	<prefix>{t=<tenant>;r=user%3A<id>}:flags                   set     locks with a flag record
//	<prefix>{t=<tenant>;r=user%3A<id>}:ban                     hash    a ban
//	<prefix>{t=<tenant>;r=abuse%3Aindex}:flagged               zset    the tenant's flags
//	<prefix>{t=<tenant>;r=abuse%3Aindex%3A<lock>}:flagged      zset    its flags on one lock
//
// A resource named "user:<id>" shares a user's tag (and slot) but never a
// key: the suffixes differ, and the tag holds no '}', so the suffix is
// always read from the same place.
package keyspace

import "strings"

// DefaultPrefix starts every key when Space.Prefix is empty.
const DefaultPrefix = "lg:"

// Space is the key layout under one prefix. The zero value uses
// DefaultPrefix. The prefix must not contain '{' or '}' (the server
// refuses one that does): the hash tag is the gateway's.
//
// The tenant is always the first argument of a Space method and always
// goes into the hash tag, so the same names in two tenants never share a
// key.
type Space struct {
	// Prefix starts every key, e.g. "lg:". Empty means DefaultPrefix.
	Prefix string
}

// base is the key of name in tenant without its suffix.
func (s Space) base(tenant, name string) string {
	p := s.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return p + HashTag(tenant, name)
}

// Resource returns the keys of lock resource in tenant.
func (s Space) Resource(tenant, resource string) Resource {
	return Resource{base: s.base(tenant, resource)}
}

// LockKeys returns Resource(tenant, resource).Lock() and .Fence() built in
// one allocation (both are substrings of one string): the lock engine
// builds them on every call.
func (s Space) LockKeys(tenant, resource string) (lock, fence string) {
	p := s.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	t, r := escape(tenant), escape(resource)
	n := len(p) + len("{t=") + len(t) + len(";r=") + len(r) + len("}")
	var b strings.Builder
	b.Grow(2*n + len(lockSuffix) + len(fenceSuffix))
	for _, suffix := range [2]string{lockSuffix, fenceSuffix} {
		b.WriteString(p)
		b.WriteString("{t=")
		b.WriteString(t)
		b.WriteString(";r=")
		b.WriteString(r)
		b.WriteString("}")
		b.WriteString(suffix)
	}
	all := b.String()
	return all[:n+len(lockSuffix)], all[n+len(lockSuffix):]
}

const (
	lockSuffix  = ":lock"
	fenceSuffix = ":fence"
)

// Resource is the keys of one lock of the lock engine. They share one
// hash tag, so a script given both runs on one Cluster node.
type Resource struct{ base string }

// Lock is the key of the live lease (a hash: owner, token, acquired_at,
// expires_at). It is also the release message of the resource.
func (r Resource) Lock() string { return r.base + lockSuffix }

// Fence is the key of the last fencing token handed out.
func (r Resource) Fence() string { return r.base + fenceSuffix }

// Waiters is the key of the acquires that wait on the resource,
// fleet-wide (a hash of waiter ids, with a TTL), so a release publishes a
// wake-up only when someone waits.
func (r Resource) Waiters() string { return r.base + ":waiters" }

// User returns the abuse keys of userID in tenant.
func (s Space) User(tenant, userID string) User {
	return User{base: s.base(tenant, "user:"+userID)}
}

// User is the abuse keys of one (tenant, user). They share one hash tag,
// so each script or MULTI on them runs on one Cluster node.
//
// Lock names are [A-Za-z0-9._-] (the caller checks), so they are written
// after the tag as they are.
type User struct{ base string }

// Counter is the key of the user's counter on user lock lock (a hash: n,
// start, exp).
func (u User) Counter(lock string) string { return u.base + ":ul:" + lock }

// Flag is the key of the user's flag record on lock.
func (u User) Flag(lock string) string { return u.base + ":flag:" + lock }

// Flags is the key of the set of locks the user has a flag record on.
func (u User) Flags() string { return u.base + ":flags" }

// Ban is the key of the user's ban in the tenant.
func (u User) Ban() string { return u.base + ":ban" }

// FlagIndex is the key of tenant's index of flags on lock, or on every
// lock when lock is "". Indexes list many users, so each has its own tag.
func (s Space) FlagIndex(tenant, lock string) string {
	name := "abuse:index"
	if lock != "" {
		name += ":" + lock
	}
	return s.base(tenant, name) + ":flagged"
}

// HashTag returns the Redis Cluster hash tag, braces included, under
// which every key of (tenant, name) lives: "{t=<tenant>;r=<name>}" with
// both parts escaped (escape). The escaping is injective, so two different
// (tenant, name) pairs never share a tag, and the tag holds no '}', so no
// name can end it early and choose its own slot.
func HashTag(tenant, name string) string {
	return "{t=" + escape(tenant) + ";r=" + escape(name) + "}"
}

// escape writes s with the bytes that carry meaning in a key escaped as
// %XX: '%', '{', '}', ':', ';', '=' and control bytes. It is injective
// because '%' itself is escaped.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	need := false
	for i := 0; i < len(s); i++ {
		if mustEscape(s[i]) {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func mustEscape(c byte) bool {
	switch c {
	case '%', '{', '}', ':', ';', '=':
		return true
	}
	return c < 0x20 || c == 0x7F
}
