package scripts

import "github.com/redis/go-redis/v9"

// ByName lists every script under the name its metrics carry (the "op"
// label of leasegate_redis_duration_seconds and leasegate_redis_errors_total).
// Add each new script here.
func ByName() map[string]*redis.Script {
	return map[string]*redis.Script{
		"acquire":  Acquire,
		"release":  Release,
		"renew":    Renew,
		"status":   Status,
		"interest": Interest,

		"force_release": ForceRelease,
		"index_add":     IndexAdd,
		"watch":         Watch,

		"user_attempt": UserAttempt,
		"ban":          Ban,
		"unindex":      Unindex,

		"sem_acquire":    SemAcquire,
		"sem_release":    SemRelease,
		"sem_renew":      SemRenew,
		"sem_status":     SemStatus,
		"claim":          Claim,
		"claim_complete": ClaimComplete,
		"claim_abandon":  ClaimAbandon,
		"claim_status":   ClaimStatus,
		"claim_remove":   ClaimRemove,
	}
}
