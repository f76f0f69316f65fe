package leasegate_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/leasegate/leasegate"
)

// ErrorOf says which errors are failures to log: store outages and
// internal errors are; a full waiting queue, domain refusals and bad
// input are answers, not failures.
func TestErrorOfSaysWhichErrorsAreFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		err     error
		code    leasegate.Code
		failure bool
	}{
		{"a store outage", fmt.Errorf("%w: %w", leasegate.ErrUnavailable, errors.New("dial tcp: refused")), leasegate.CodeUnavailable, true},
		{"a deadline", context.DeadlineExceeded, leasegate.CodeUnavailable, true},
		{"an error without a code", errors.New("boom"), leasegate.CodeInternal, true},
		{"a full waiting queue", leasegate.ErrTooManyWaiters, leasegate.CodeUnavailable, false},
		{"a call refused with the store known down", fmt.Errorf("%w: %w", leasegate.ErrUnavailable, fmt.Errorf("x: %w", leasegate.ErrStoreDown)), leasegate.CodeUnavailable, false},
		{"a lock held by another owner", leasegate.ErrLockForbidden, leasegate.CodeForbidden, false},
		{"bad input", leasegate.Invalid(leasegate.FieldError{Field: "owner", Message: "must not be empty"}), leasegate.CodeValidation, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, failure := leasegate.ErrorOf(tc.err)
			if e.Code != tc.code || failure != tc.failure {
				t.Errorf("got %s, failure %v; want %s, failure %v", e.Code, failure, tc.code, tc.failure)
			}
		})
	}
}
