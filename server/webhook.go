package server

import (
	"context"
	"fmt"
	"strings"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/webhook"
)

// validateWebhooks checks --webhook-url and --webhook-secret.
func (c Config) validateWebhooks() []error {
	w := c.Webhooks
	if len(w.URLs) == 0 {
		if w.Secret != "" {
			return []error{fmt.Errorf("webhook-secret is set but no webhook-url")}
		}
		return nil
	}
	var errs []error
	if len(w.Secret) < webhook.MinSecretLength {
		errs = append(errs, fmt.Errorf("webhook-secret must be at least %d bytes with webhook-url (every delivery is signed)", webhook.MinSecretLength))
	}
	seen := map[string]bool{}
	for _, u := range w.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("webhook-url %q must be an http:// or https:// URL", u))
		}
		if seen[u] {
			errs = append(errs, fmt.Errorf("webhook-url %q given twice", u))
		}
		seen[u] = true
	}
	return errs
}

// webhooksOn says whether this deployment has webhooks: then abuse events
// and forced releases are written to the outbox and delivered from it.
func (c Config) webhooksOn() bool { return len(c.Webhooks.URLs) > 0 }

// startWebhooks starts this gateway's share of webhook delivery: every
// gateway of the fleet delivers from the same outbox (package webhook).
func (s *Server) startWebhooks() error {
	if !s.cfg.webhooksOn() {
		return nil
	}
	cfg := s.cfg.Webhooks
	cfg.Prefix = s.cfg.KeyPrefix
	cfg.Log = s.log.Named("webhook")
	cfg.Metrics = s.metrics
	d, err := webhook.New(s.rdb, cfg)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := d.Start(context.Background()); err != nil {
		return err
	}
	s.hooks = d
	return nil
}

// webhookInspector is GET /abuse/webhooks's view of the outbox (nil
// without webhooks).
func (s *Server) webhookInspector() leasegate.WebhookInspector {
	if !s.cfg.webhooksOn() {
		return nil
	}
	return webhook.NewInspector(s.rdb, s.cfg.KeyPrefix, true)
}
