package main

import (
	"flag"

	"github.com/leasegate/leasegate/server"
)

// operatorFlags binds the flags of the operator tools (docs/operations.md).
func operatorFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.Var(listFlag{p: &cfg.LockClasses}, "lock-classes", "comma-separated resource prefixes that label the contention metrics (every other resource is _other)")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", cfg.AuditRetention, "how long audit records of operator actions are kept")
	fs.DurationVar(&cfg.IndexSweepInterval, "index-sweep-interval", cfg.IndexSweepInterval, "how often the lock index of each tenant is swept of ended leases (and expiries counted)")
}
