package keyspace

// Keys of the operator tools (docs/operations.md, docs/keys.md):
//
//	<prefix>{t=<tenant>;r=locks%3Aindex}:held       zset    the tenant's leased resources, score 0 (lexical order)
//	<prefix>{t=<tenant>;r=<resource>}:forced        string  the token an operator force-released (a minute)
//	<prefix>{t=<tenant>;r=audit}:audit              stream  the tenant's operator actions
//	<prefix>{t=;r=ops%3Aactivity}:gw:<gateway>      string  a gateway's activity snapshot (JSON, 30 s)
//	<prefix>{t=;r=ops%3Aactivity}:gateways          zset    the gateways with a snapshot
//
// The index and the audit stream each have a tag of their own: on Redis
// Cluster they are not in any resource's slot.

// LockIndex is the key of tenant's index of leased resources: a sorted set
// whose members are resource names, all scored 0, so ZRANGEBYLEX pages it
// in resource order. Entries may outlive their lease (the listing checks
// each against its lock key and prunes it).
func (s Space) LockIndex(tenant string) string {
	return s.base(tenant, "locks:index") + ":held"
}

// Forced is the key that remembers, for a short while, the token an
// operator force-released, so that watchers tell a forced release from
// its holder's.
func (r Resource) Forced() string { return r.base + ":forced" }

// Audit is the key of tenant's audit trail (a capped stream).
func (s Space) Audit(tenant string) string {
	return s.base(tenant, "audit") + ":audit"
}

// GatewayActivity is the key of one gateway's snapshot of its activity
// (the /ops/ Locks view's charts, metrics.Activity), rewritten every few
// seconds and expiring a few intervals later. It is of no tenant: a
// gateway serves them all. ActivityGateways is the set of the gateways
// that wrote one; both share a tag, so they are written in one MULTI.
func (s Space) GatewayActivity(gateway string) string {
	return s.base("", "ops:activity") + ":gw:" + gateway
}

// ActivityGateways is the key of the set of gateways with an activity
// snapshot (GatewayActivity): member the gateway's id, score its
// snapshot's expiry in Unix milliseconds.
func (s Space) ActivityGateways() string { return s.base("", "ops:activity") + ":gateways" }
