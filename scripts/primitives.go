package scripts

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed sem_acquire.lua
	semAcquireSrc string
	//go:embed sem_release.lua
	semReleaseSrc string
	//go:embed sem_renew.lua
	semRenewSrc string
	//go:embed sem_status.lua
	semStatusSrc string

	//go:embed claim.lua
	claimSrc string
	//go:embed claim_complete.lua
	claimCompleteSrc string
	//go:embed claim_abandon.lua
	claimAbandonSrc string
	//go:embed claim_status.lua
	claimStatusSrc string
	//go:embed claim_remove.lua
	claimRemoveSrc string
)

// Scripts for counting semaphores (package semaphore).
var (
	SemAcquire = redis.NewScript(semAcquireSrc)
	SemRelease = redis.NewScript(semReleaseSrc)
	SemRenew   = redis.NewScript(semRenewSrc)
	SemStatus  = redis.NewScript(semStatusSrc)
)

// Scripts for claims (package claim).
var (
	Claim         = redis.NewScript(claimSrc)
	ClaimComplete = redis.NewScript(claimCompleteSrc)
	ClaimAbandon  = redis.NewScript(claimAbandonSrc)
	ClaimStatus   = redis.NewScript(claimStatusSrc)
	ClaimRemove   = redis.NewScript(claimRemoveSrc)
)
