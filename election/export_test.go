package election

import (
	"context"
	"time"

	"github.com/leasegate/leasegate"
)

// AcquireOnly is a campaign's first step alone, the lock engine's acquire
// without the proclaim: a campaign caught between its two steps.
func (s *Service) AcquireOnly(ctx context.Context, tenant, name, candidate string, ttl time.Duration) (leasegate.AcquireResult, error) {
	return s.locks.Acquire(ctx, tenant, leasegate.AcquireRequest{Resource: name, Owner: candidate, TTL: ttl})
}
