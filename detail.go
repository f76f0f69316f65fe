package leasegate

import "time"

// Detailed returns an error that is errors.Is sentinel and whose *Error
// (errors.As, ErrorOf) is a copy of sentinel with message and retryAfter:
// a 409 that names the limit in force, say, while callers still match
// the package sentinel.
func Detailed(sentinel *Error, message string, retryAfter time.Duration) error {
	e := *sentinel
	e.Message = message
	e.RetryAfter = retryAfter
	return &detailedError{e: &e, sentinel: sentinel}
}

type detailedError struct {
	e        *Error
	sentinel *Error
}

func (d *detailedError) Error() string { return d.e.Error() }

// Unwrap lists the detailed copy first, so errors.As finds it before the
// sentinel.
func (d *detailedError) Unwrap() []error { return []error{d.e, d.sentinel} }
