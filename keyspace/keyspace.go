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
//	<prefix>{t=<tenant>;r=<resource>}:lock                     hash    a lease, or its tombstone (the token): also the fence
//	<prefix>{t=<tenant>;r=<resource>}:waiters                  hash    the acquires that wait: their tickets' deadlines
//	<prefix>{t=<tenant>;r=<resource>}:queue                    zset    the line of waiters, in arrival order
//	<prefix>{t=<tenant>;r=<resource>}:released                 channel its releases (sharded pub/sub, Cluster)
//	<prefix>{t=<tenant>;r=user%3A<id>}:ul:<lock>               hash    a user lock counter
//	<prefix>{t=<tenant>;r=user%3A<id>}:flag:<lock>             hash    a flag record
//	<prefix>{t=<tenant>;r=user%3A<id>}:flags                   set     locks with a flag record
//	<prefix>{t=<tenant>;r=user%3A<id>}:ban                     hash    a ban
//	<prefix>{t=<tenant>;r=abuse%3Aindex}:flagged               zset    the tenant's flags
//	<prefix>{t=<tenant>;r=abuse%3Aindex%3A<lock>}:flagged      zset    its flags on one lock
//	<prefix>{t=<tenant>;r=abuse%3Aattempts%3A<lock>}:attempts  stream  the attempt log of one user lock
//	<prefix>{t=;r=ops-login%3Aaddr%3A<address>}:failures        string  failed page logins from one address
//	<prefix>{t=<tenant>;r=ops-login%3Akey%3A<name>}:failures    string  page logins refused to one key
//	<prefix>{t=<tenant>;r=ops-session%3A<id>}:revoked          string  a page session ended by logout
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:permits            zset    a semaphore's live permits
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:holders            hash    their tokens
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:limit              string  the limit in force
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:fence              string  the last permit token
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:waiters            hash    its waiters' tickets' deadlines
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:queue              zset    its line of waiters, in arrival order
//	<prefix>{t=<tenant>;r=sem%3A<name>}:sem:released           channel its releases (sharded pub/sub, Cluster)
//	<prefix>{t=<tenant>;r=claim%3A<scope>%3A<key>}:claim        hash    a claim
//	<prefix>{t=;r=webhook%3Aoutbox}:events                     stream  the webhook outbox (every tenant)
//	<prefix>{t=;r=webhook%3Aoutbox}:dead                       stream  webhook events given up on
//	<prefix>{t=<tenant>;r=locks%3Aindex}:held                  zset    the tenant's leased resources
//	<prefix>{t=<tenant>;r=<resource>}:forced                   string  a force-released token
//	<prefix>{t=<tenant>;r=audit}:audit                         stream  the tenant's operator actions
//	<prefix>{t=;r=ops%3Aactivity}:gw:<gateway>                 string  a gateway's activity snapshot (the ops page's charts)
//	<prefix>{t=;r=ops%3Aactivity}:gateways                     zset    the gateways with one
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

// LockKeys returns Resource(tenant, resource).Lock(), .Waiters() and
// .Queue() built in one allocation (all are substrings of one string):
// the lock engine builds them on every call.
func (s Space) LockKeys(tenant, resource string) (lock, waiters, queue string) {
	p := s.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	t, r := escape(tenant), escape(resource)
	n := len(p) + len("{t=") + len(t) + len(";r=") + len(r) + len("}")
	var b strings.Builder
	b.Grow(3*n + len(lockSuffix) + len(waitersSuffix) + len(queueSuffix))
	for _, suffix := range [3]string{lockSuffix, waitersSuffix, queueSuffix} {
		b.WriteString(p)
		b.WriteString("{t=")
		b.WriteString(t)
		b.WriteString(";r=")
		b.WriteString(r)
		b.WriteString("}")
		b.WriteString(suffix)
	}
	all := b.String()
	i, j := n+len(lockSuffix), 2*n+len(lockSuffix)+len(waitersSuffix)
	return all[:i], all[i:j], all[j:]
}

const (
	lockSuffix    = ":lock"
	waitersSuffix = ":waiters"
	queueSuffix   = ":queue"
)

// Resource is the keys of one lock of the lock engine. They share one
// hash tag, so a script given several runs on one Cluster node.
type Resource struct{ base string }

// Lock is the key of the lease (a hash: owner, token, acquired_at,
// expires_at; held only while expires_at is ahead of the Redis clock),
// left as a tombstone holding only the token when the lease ends
// (docs/keys.md). It is also the release message of the resource.
func (r Resource) Lock() string { return r.base + lockSuffix }

// Waiters is the key of the acquires that wait on the resource,
// fleet-wide (a hash: "q:<owner>" -> its ticket's deadline in ms, and
// the event watchers; with a TTL), so a release publishes a wake-up only
// when someone waits.
func (r Resource) Waiters() string { return r.base + waitersSuffix }

// Queue is the key of the resource's line of waiters, fleet-wide (a
// sorted set: owner by arrival, in microseconds of the Redis clock). The
// deadlines of their tickets are fields "q:<owner>" of Waiters
// (docs/waiting.md, "One line per name").
func (r Resource) Queue() string { return r.base + queueSuffix }

// Released is the shard channel of the resource's releases (SPUBLISH,
// Redis Cluster >= 7; docs/waiting.md). Its hash tag is the lock key's,
// so it maps to the lock key's slot: a release script may publish on it,
// and the message reaches only the node that serves the slot and the
// gateways subscribed to it there. A channel is not a key; the name only
// shares the layout.
func (r Resource) Released() string { return r.base + releasedSuffix }

// releasedSuffix ends every shard channel. A channel holding a hash tag
// is a shard channel: the release scripts SPUBLISH to it (ShardChannel).
const releasedSuffix = ":released"

// ShardChannel reports whether a release channel is a shard channel
// (Released) rather than the fleet-wide classic one: it holds a hash tag.
// The release scripts apply the same rule ('{' in the channel: SPUBLISH),
// which holds because a prefix never contains a brace.
func ShardChannel(channel string) bool { return strings.Contains(channel, "{") }

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

// AttemptLog is the key of tenant's attempt log of user lock lock: a
// stream of every attempt (docs/abuse.md, "Backtesting a policy"). It
// lists many users, so it has a tag of its own, like FlagIndex.
func (s Space) AttemptLog(tenant, lock string) string {
	return s.base(tenant, "abuse:attempts:"+lock) + ":attempts"
}

// Login scopes of LoginFailures.
const (
	// LoginByAddress counts failed /ops/ logins per client address.
	LoginByAddress = "addr"
	// LoginByKey counts /ops/ logins refused to a known key, per key name.
	LoginByKey = "key"
)

// LoginFailures is the key of the counter of failed /ops/ page logins of
// one subject: scope LoginByAddress with a client address (tenant "": a
// login has no tenant until a key matched), or LoginByKey with a key's
// name (its tenant). Each counter has its own tag.
func (s Space) LoginFailures(tenant, scope, subject string) string {
	return s.base(tenant, "ops-login:"+scope+":"+subject) + ":failures"
}

// SessionRevoked is the key that marks the /ops/ page session id of
// tenant ended (logged out) until the session would have expired.
func (s Space) SessionRevoked(tenant, id string) string {
	return s.base(tenant, "ops-session:"+id) + ":revoked"
}

// Outbox is the key of the webhook outbox: a stream of the events (flag,
// ban, unban, clear, force-release) of every tenant, the tenant in each
// entry, read by the gateways' deliverers through one consumer group per
// URL (docs/abuse.md). It has a tag of its own: on Redis Cluster it
// cannot share a slot with every user's or lock's keys (see docs/abuse.md
// for the trade-off).
func (s Space) Outbox() string { return s.base("", "webhook:outbox") + ":events" }

// DeadLetters is the key of the stream of webhook events the deliverer
// gave up on; it shares the outbox's tag, so moving an event there and
// acknowledging it is one MULTI.
func (s Space) DeadLetters() string { return s.base("", "webhook:outbox") + ":dead" }

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

// Semaphore returns the keys of counting semaphore name in tenant. Its
// tag is the one of the name "sem:<name>"; the suffixes all start with
// ":sem:", so they never meet a lock's ":lock" or ":fence".
func (s Space) Semaphore(tenant, name string) Semaphore {
	return Semaphore{base: s.base(tenant, "sem:"+name)}
}

// Semaphore is the keys of one counting semaphore. They share one hash
// tag, so each script runs on one Cluster node.
type Semaphore struct{ base string }

// Permits is the key of the live permits (a sorted set: owner by
// expires_at in ms; its size is the number of holders). It is also the
// release message of the semaphore.
func (k Semaphore) Permits() string { return k.base + ":sem:permits" }

// Holders is the key of the permits' tokens (a hash: owner ->
// "token:acquired_at_ms").
func (k Semaphore) Holders() string { return k.base + ":sem:holders" }

// Limit is the key of the limit in force while permits are held.
func (k Semaphore) Limit() string { return k.base + ":sem:limit" }

// Fence is the key of the last fencing token handed out.
func (k Semaphore) Fence() string { return k.base + ":sem:fence" }

// Waiters is the key of the deadlines of the tickets of the semaphore's
// waiters (a hash: "q:<owner>" -> ms), as a lock's Resource.Waiters.
func (k Semaphore) Waiters() string { return k.base + ":sem:waiters" }

// Queue is the key of the semaphore's line of waiters (Resource.Queue).
func (k Semaphore) Queue() string { return k.base + ":sem:queue" }

// Released is the shard channel of the semaphore's releases (see
// Resource.Released).
func (k Semaphore) Released() string { return k.base + ":sem" + releasedSuffix }

// Claim returns the key of claim (scope, key) in tenant (a hash: state,
// owner, token, times, result). Its tag is the one of the name
// "claim:<scope>:<key>"; scopes are [A-Za-z0-9._-] (the caller checks),
// so no scope and key pair spells another's.
func (s Space) Claim(tenant, scope, key string) string {
	return s.base(tenant, "claim:"+scope+":"+key) + ":claim"
}
