package abuse

// Keys: package keyspace lays them out (keyspace.Space.User and
// FlagIndex; docs/abuse.md). Every key of one (tenant, user) shares that
// user's hash tag, and each script or MULTI touches only keys of one user.
// The tenant's flag indexes list many users, so they have tags of their
// own and are updated in a second step.

// indexMember names a flag in an index. Lock names contain no ':', so the
// first ':' splits it unambiguously.
func indexMember(lock, userID string) string { return lock + ":" + userID }
