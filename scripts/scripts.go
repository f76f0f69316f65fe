// Package scripts holds leasegate's Lua scripts, embedded, one file a script.
//
// Every script takes all of its keys in KEYS (so it runs unchanged on Redis
// Cluster when the keys share a hash tag), reads time from the server with
// TIME, and documents its reply shape at the top of its file. Callers decode
// replies with checked type assertions.
package scripts

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire.lua
	acquireSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed renew.lua
	renewSrc string
	//go:embed status.lua
	statusSrc string
	//go:embed user_attempt.lua
	userAttemptSrc string
	//go:embed ban.lua
	banSrc string
	//go:embed unindex.lua
	unindexSrc string
	//go:embed unban.lua
	unbanSrc string
)

// Scripts for resource locks. Run them with Script.Run, which uses EVALSHA
// and falls back to EVAL when the server answers NOSCRIPT.
var (
	Acquire = redis.NewScript(acquireSrc)
	Release = redis.NewScript(releaseSrc)
	Renew   = redis.NewScript(renewSrc)
	Status  = redis.NewScript(statusSrc)
)

// Scripts for user locks and abuse control (package abuse).
var (
	UserAttempt = redis.NewScript(userAttemptSrc)
	Ban         = redis.NewScript(banSrc)
	// Unindex removes flag index entries that still have a given score.
	Unindex = redis.NewScript(unindexSrc)
	// Unban lifts a ban and writes its webhook event, atomically.
	Unban = redis.NewScript(unbanSrc)
)
