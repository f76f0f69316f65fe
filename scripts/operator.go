package scripts

// Scripts of the operator tools (docs/operations.md).
var (
	// ForceRelease ends whoever's lease and burns its token.
	ForceRelease = loadInLine("force_release")
	// IndexAdd enters a resource in its tenant's lock index where
	// acquire.lua cannot (Redis Cluster).
	IndexAdd = load("index_add")
	// Watch enters an event watcher among a resource's waiters.
	Watch = load("watch")
)
