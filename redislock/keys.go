package redislock

import "github.com/leasegate/leasegate/keyspace"

// HashTag returns the Redis Cluster hash tag of (tenant, name).
//
// Deprecated: the key layout lives in package keyspace; use
// keyspace.HashTag.
func HashTag(tenant, name string) string { return keyspace.HashTag(tenant, name) }
