package scripts

import "github.com/redis/go-redis/v9"

// ByName lists every script under the name its metrics carry (the "op"
// label of leasegate_redis_duration_seconds and leasegate_redis_errors_total).
// Add each new script here.
func ByName() map[string]*redis.Script {
	return map[string]*redis.Script{
		"acquire": Acquire,
		"release": Release,
		"renew":   Renew,
		"status":  Status,

		"user_attempt": UserAttempt,
		"ban":          Ban,
		"unindex":      Unindex,
		"unban":        Unban,
	}
}
