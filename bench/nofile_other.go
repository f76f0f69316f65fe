//go:build !unix

package bench

import "errors"

func raiseNoFile(uint64) (uint64, error) {
	return 0, errors.New("bench: waiters: needs a Unix system (RLIMIT_NOFILE, /proc)")
}
