//go:build unix

package bench

import (
	"fmt"
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used so far.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// raiseNoFile raises this process's open-files soft limit to its hard
// limit (the Go runtime usually has already) and returns it; an error
// when it stays below need.
func raiseNoFile(need uint64) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("bench: RLIMIT_NOFILE: %w", err)
	}
	if rl.Cur < rl.Max {
		rl.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
			return 0, fmt.Errorf("bench: raise RLIMIT_NOFILE to %d: %w", rl.Max, err)
		}
	}
	if rl.Cur < need {
		return rl.Cur, fmt.Errorf("bench: waiters: %d open files needed, the limit is %d (raise the hard limit: ulimit -Hn)", need, rl.Cur)
	}
	return rl.Cur, nil
}
