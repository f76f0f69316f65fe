//go:build !unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// Without unix process groups only the command itself is signalled, and
// on Windows only KILL can be delivered.
var signalNames = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL,
}

func ownProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if err := cmd.Process.Signal(sig); err != nil {
		_ = cmd.Process.Kill()
	}
}
