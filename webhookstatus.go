package leasegate

import (
	"context"
	"time"
)

// DeadLetter is a webhook event the gateway gave up on after its last try.
type DeadLetter struct {
	EventID string
	Type    string
	URL     string
	Tries   int64
	// Error is the last try's failure.
	Error    string
	FailedAt time.Time
	// Event is the JSON body that was POSTed.
	Event []byte
}

// WebhookStatus is the state of the webhook outbox as one tenant sees it.
type WebhookStatus struct {
	// Enabled: this gateway has webhook URLs configured.
	Enabled bool
	// OutboxEntries is the outbox stream's length (every tenant's
	// events, delivered or not, up to its bound); Pending the events read
	// but not yet delivered, over all URLs.
	OutboxEntries int64
	Pending       int64
	// DeadLetters are the tenant's events given up on, newest first.
	DeadLetters []DeadLetter
}

// Page sizes of WebhookInspector.Status's dead letters.
const (
	DefaultDeadLetterPageSize = 50
	MaxDeadLetterPageSize     = 500
)

// WebhookInspector shows operators the webhook outbox and its dead
// letters (leasegate abuse webhooks).
type WebhookInspector interface {
	// Status returns the outbox's state with at most limit of tenant's
	// dead letters (0: DefaultDeadLetterPageSize).
	Status(ctx context.Context, tenant string, limit int) (WebhookStatus, error)
}
