package main

import (
	"flag"
	"strings"

	"github.com/leasegate/leasegate/server"
)

// webhookFlags binds the serve flags of abuse webhooks (docs/abuse.md).
func webhookFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.Var((*urlList)(&cfg.Webhooks.URLs), "webhook-url", "URL that receives every abuse event (flag, ban, unban, clear) and forced lock release (force-release) as a signed POST; repeatable, or comma-separated")
	fs.StringVar(&cfg.Webhooks.Secret, "webhook-secret", cfg.Webhooks.Secret, "secret (at least 16 bytes) that signs every webhook delivery (Leasegate-Signature); required with --webhook-url; prefer LEASEGATE_WEBHOOK_SECRET to the flag")
	fs.IntVar(&cfg.Webhooks.MaxAttempts, "webhook-max-attempts", cfg.Webhooks.MaxAttempts, "tries of one webhook event before it is dead-lettered")
	fs.DurationVar(&cfg.Webhooks.Timeout, "webhook-timeout", cfg.Webhooks.Timeout, "bound on one webhook POST")
}

// urlList is a repeatable flag value; each value may hold several URLs,
// comma-separated (as LEASEGATE_WEBHOOK_URL does). Values add up.
type urlList []string

func (l *urlList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *urlList) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}
