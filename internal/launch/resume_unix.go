//go:build unix

package launch

import (
	"os"
	"syscall"
)

// resume sends SIGCONT: a paused (SIGSTOP) process runs again.
func resume(p *os.Process) { _ = p.Signal(syscall.SIGCONT) }
