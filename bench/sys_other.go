//go:build !unix

package bench

import (
	"errors"
	"time"
)

// processCPU is not measured on this platform.
func processCPU() (time.Duration, bool) { return 0, false }

func raiseNoFile(uint64) (uint64, error) {
	return 0, errors.New("bench: waiters: needs a Unix system (RLIMIT_NOFILE, /proc)")
}
