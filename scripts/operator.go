package scripts

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed force_release.lua
	forceReleaseSrc string
	//go:embed index_add.lua
	indexAddSrc string
	//go:embed watch.lua
	watchSrc string
)

// Scripts of the operator tools (docs/operations.md).
var (
	// ForceRelease ends whoever's lease and burns its token.
	ForceRelease = redis.NewScript(forceReleaseSrc)
	// IndexAdd enters a resource in its tenant's lock index where
	// acquire.lua cannot (Redis Cluster).
	IndexAdd = redis.NewScript(indexAddSrc)
	// Watch enters an event watcher among a resource's waiters.
	Watch = redis.NewScript(watchSrc)
)
