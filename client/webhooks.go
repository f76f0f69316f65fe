package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// DeadLetter is a webhook event the gateway gave up on.
type DeadLetter struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	URL      string          `json:"url"`
	Tries    int64           `json:"tries"`
	Error    string          `json:"error"`
	FailedAt time.Time       `json:"failed_at"`
	Event    json.RawMessage `json:"event"`
}

// WebhookStatus is GET /abuse/webhooks: the outbox's depth and the
// tenant's dead letters, newest first.
type WebhookStatus struct {
	Enabled       bool         `json:"enabled"`
	OutboxEntries int64        `json:"outbox_entries"`
	Pending       int64        `json:"pending"`
	DeadLetters   []DeadLetter `json:"dead_letters"`
}

// WebhookStatus returns the webhook outbox's state with at most limit
// dead letters (0: the gateway's default, 50). Ops role.
func (c *Client) WebhookStatus(ctx context.Context, limit int) (WebhookStatus, error) {
	path := "/abuse/webhooks"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var out WebhookStatus
	_, err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}
