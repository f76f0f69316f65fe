package main

import (
	"flag"

	"github.com/leasegate/leasegate/server"
)

// authFlags binds the authentication and client-IP flags of serve.
func authFlags(fs *flag.FlagSet, cfg *server.Config) {
	fs.StringVar(&cfg.APIKeysFile, "api-keys-file", cfg.APIKeysFile, "file of API key entries name:role:tenant:sha256hex, one per line (docs/auth.md)")
	fs.StringVar(&cfg.APIKeys, "api-keys", cfg.APIKeys, "comma-separated API key entries name:role:tenant:sha256hex, added to --api-keys-file's")
	fs.BoolVar(&cfg.InsecureOpen, "insecure-open", cfg.InsecureOpen, "allow running without API keys on a non-loopback address (anyone who can connect is an operator)")
	fs.StringVar(&cfg.MetricsAuth, "metrics-auth", cfg.MetricsAuth, "who may read /metrics when keys are configured: ops (an ops key) or none (anyone)")
	fs.DurationVar(&cfg.OpsSessionTTL, "ops-session-ttl", cfg.OpsSessionTTL, "how long a browser login to the /ops/ page lasts (1m..168h)")
	fs.StringVar(&cfg.OpsSessionSecret, "ops-session-secret", cfg.OpsSessionSecret, "secret (at least 32 bytes) mixed into /ops/ session cookies so the key file alone cannot forge one; the same on every gateway; prefer LEASEGATE_OPS_SESSION_SECRET to the flag")
	fs.BoolVar(&cfg.HTTP.OpsSecureCookies, "ops-secure-cookies", cfg.HTTP.OpsSecureCookies, "mark the /ops/ page's cookies Secure on plain HTTP too (behind a TLS-terminating proxy); over TLS they always are")
	fs.Var(listFlag{p: &cfg.TrustedProxies}, "trusted-proxies", "comma-separated CIDRs or addresses of reverse proxies whose X-Forwarded-For is believed (default none: the peer address is the client)")
}
