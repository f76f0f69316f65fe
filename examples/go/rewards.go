// Package rewards is a tiny service that uses leasegate, with the tests a
// team would write for it (rewards_test.go): it pays each order's reward
// once, whichever of its workers runs, and refuses a user's password
// resets from the 5th attempt in a window on.
//
// It is a module of its own that imports only leasegate's public
// packages; its tests use leasegatetest.
package rewards

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/leasegate/leasegate/client"
)

// Service is the service.
type Service struct {
	Gateway *client.Client
	// Pay pays the reward of order.
	Pay func(ctx context.Context, order string) error
	// SendReset sends a password-reset mail to user.
	SendReset func(user string)
}

// PayReward pays order's reward unless it was paid already, and says
// which worker paid it.
func (s *Service) PayReward(ctx context.Context, worker, order string) (paidBy string, err error) {
	res, err := s.Gateway.Once(ctx, "rewards", order, func(ctx context.Context) (json.RawMessage, error) {
		if err := s.Pay(ctx, order); err != nil {
			return nil, err
		}
		return json.Marshal(worker)
	}, client.WithOnceOwner(worker), client.WithClaimTTL(time.Minute))
	if err != nil {
		return "", err
	}
	err = json.Unmarshal(res, &paidBy)
	return paidBy, err
}

// ErrTooManyResets: the user asked for too many resets in a window.
var ErrTooManyResets = errors.New("rewards: too many password resets, try later")

// ResetPassword sends user a reset mail, at most one in a 10-minute
// window; the 5th request in a window flags the user.
func (s *Service) ResetPassword(ctx context.Context, user string) error {
	res, err := s.Gateway.UserLock(ctx, "password-reset", user, 10*time.Minute)
	switch {
	case err != nil:
		return err
	case res.Flagged:
		return ErrTooManyResets
	case res.Acquired:
		s.SendReset(user)
	}
	return nil
}
