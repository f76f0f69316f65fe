// Package scripts holds leasegate's Lua scripts, embedded, one file a script.
//
// Every script takes all of its keys in KEYS (so it runs unchanged on Redis
// Cluster when the keys share a hash tag), reads time from the server with
// TIME, and documents its reply shape at the top of its file. Callers decode
// replies with checked type assertions.
package scripts

import (
	"embed"
	"fmt"
	"maps"

	"github.com/redis/go-redis/v9"
)

//go:embed *.lua
var lua embed.FS

// line is the line of waiters' functions (prelude/line.lua), put in
// front of the scripts that take, keep or leave a place in line.
//
//go:embed prelude/line.lua
var line string

// attemptLog is the attempt log's writer (prelude/attempt_log.lua), put
// in front of the scripts that log attempts.
//
//go:embed prelude/attempt_log.lua
var attemptLog string

// byName is every script registered by load.
var byName = map[string]*redis.Script{}

// load is the one way a script is added: it reads name.lua and lists the
// script under name in ByName. A name without its file is a programming
// error, found when the package initialises.
func load(name string) *redis.Script { return loadAfter("", name) }

// loadInLine is load for a script that calls line.lua's functions.
func loadInLine(name string) *redis.Script { return loadAfter(line, name) }

func loadAfter(prelude, name string) *redis.Script {
	src, err := lua.ReadFile(name + ".lua")
	if err != nil {
		panic(fmt.Sprintf("scripts: %v", err))
	}
	s := redis.NewScript(prelude + string(src))
	byName[name] = s
	return s
}

// ByName lists every script under the name its metrics carry (the "op"
// label of leasegate_redis_duration_seconds and leasegate_redis_errors_total):
// its file name without .lua.
func ByName() map[string]*redis.Script {
	return maps.Clone(byName)
}

// Scripts for resource locks. Run them with Script.Run, which uses EVALSHA
// and falls back to EVAL when the server answers NOSCRIPT.
var (
	Acquire = loadInLine("acquire")
	Release = loadInLine("release")
	Renew   = load("renew")
	Status  = load("status")
	// Unwatch takes an event watcher off its resource's waiters.
	Unwatch = load("unwatch")
	// Leave takes a waiter's ticket out of a line (locks and semaphores).
	Leave = loadInLine("leave")
	// AcquireSet and ReleaseSet take and end the leases of a lock set,
	// all or none (docs/lock-sets.md).
	AcquireSet = loadInLine("acquire_set")
	ReleaseSet = loadInLine("release_set")
)

// Scripts for user locks and abuse control (package abuse).
var (
	UserAttempt = loadAfter(attemptLog, "user_attempt")
	// AttemptLog writes an attempt's log entry in a second step (Cluster).
	AttemptLog = loadAfter(attemptLog, "attempt_log")
	Ban        = load("ban")
	// Unindex removes flag index entries that still have a given score.
	Unindex = load("unindex")
)

// Scripts for counting semaphores (package semaphore).
var (
	SemAcquire = loadInLine("sem_acquire")
	SemRelease = loadInLine("sem_release")
	SemRenew   = load("sem_renew")
	SemStatus  = load("sem_status")
)

// Scripts of leader elections (package election): the lease itself is
// the lock engine's (Acquire, Release), these add the leader's value.
var (
	Proclaim    = load("proclaim")
	ElectStatus = load("elect_status")
)

// Scripts for claims (package claim).
var (
	Claim         = load("claim")
	ClaimComplete = load("claim_complete")
	ClaimAbandon  = load("claim_abandon")
	ClaimStatus   = load("claim_status")
	ClaimRemove   = load("claim_remove")
)

// Scripts of the abuse engine's webhook events.
var (
	// Unban lifts a ban and writes its webhook event, atomically.
	Unban = load("unban")
)
