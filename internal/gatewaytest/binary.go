package gatewaytest

import (
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/leasegate/leasegate/internal/launch"
	"github.com/leasegate/leasegate/internal/tooltest"
)

// The gateway binary, built once per test process.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Binary builds cmd/leasegate once per test process (launch.BuildGateway)
// and returns its path, for tests that run the gateway as a process
// (rolling restarts, the PHP fixture). It builds with the race detector
// when the test binary has it, so that under the README's test command
// the build reuses the packages that command compiled and only links.
// RemoveBinary, from TestMain, deletes it. Without go on PATH the test is
// skipped (failed under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "leasegate-bin-"); binary.err == nil {
			binary.path, binary.err = launch.BuildGateway(binary.dir, raceEnabled)
		}
	})
	if binary.err != nil {
		if errors.Is(binary.err, launch.ErrNoGo) {
			tooltest.Missing(t, "%v (the Go toolchain)", binary.err)
		}
		t.Fatalf("build the gateway: %v", binary.err)
	}
	return binary.path
}

// RemoveBinary deletes what Binary built; call it from TestMain.
func RemoveBinary() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}
