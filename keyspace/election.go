package keyspace

// Elections (docs/elections.md) live on the lock engine: an election is a
// lease in the lock engine's layout, under a prefix of its own, so that
// the engine (its scripts, waiters, listing and watchers) serves it
// unchanged and no lock resource can ever name an election's key:
//
//	<prefix>elect:{t=<tenant>;r=<name>}:lock        hash    the leadership: owner (candidate), token (term), acquired_at, expires_at; value, value_term
//	<prefix>elect:{t=<tenant>;r=<name>}:waiters     hash    the campaigns that wait
//	<prefix>elect:{t=<tenant>;r=<name>}:released    channel its resignations (sharded pub/sub, Cluster)
//	<prefix>elect:{t=<tenant>;r=locks%3Aindex}:held zset    the tenant's elections with a leader
//
// Every other key of the project starts with <prefix>{, so the byte after
// the prefix ('e' here) keeps the two apart. The hash tag is the same
// tenant-and-name tag as a lock's: an election and a lock of the same
// name share a slot, never a key.

// electionsPrefix follows the deployment's prefix in every election key.
const electionsPrefix = "elect:"

// Elections returns the key space of the elections: the lock engine's
// layout under <prefix>elect:. Its Resource(tenant, name) is the keys of
// election name, its LockIndex the tenant's elections with a leader.
func (s Space) Elections() Space {
	p := s.Prefix
	if p == "" {
		p = DefaultPrefix
	}
	return Space{Prefix: p + electionsPrefix}
}
