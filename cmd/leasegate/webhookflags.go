package main

import (
	"flag"

	"github.com/leasegate/leasegate/server"
)

// webhookFlags binds the serve flags of abuse webhooks (docs/abuse.md).
func webhookFlags(fs *flag.FlagSet, cfg *server.Config) {
	// Repeatable: each value may hold several URLs, comma-separated (as
	// LEASEGATE_WEBHOOK_URL does), and values add up.
	fs.Var(listFlag{p: &cfg.Webhooks.URLs, add: true}, "webhook-url", "URL that receives every abuse event (flag, ban, unban, clear) and forced lock release (force-release) as a signed POST; repeatable, or comma-separated")
	fs.StringVar(&cfg.Webhooks.Secret, "webhook-secret", cfg.Webhooks.Secret, "secret (at least 16 bytes) that signs every webhook delivery (Leasegate-Signature); required with --webhook-url; prefer LEASEGATE_WEBHOOK_SECRET to the flag")
	fs.IntVar(&cfg.Webhooks.MaxAttempts, "webhook-max-attempts", cfg.Webhooks.MaxAttempts, "tries of one webhook event before it is dead-lettered")
	fs.DurationVar(&cfg.Webhooks.Timeout, "webhook-timeout", cfg.Webhooks.Timeout, "bound on one webhook POST")
}
