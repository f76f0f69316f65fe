package gatewaytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/leasegate/leasegate/internal/tooltest"
)

// The gateway binary, built once per test process.
var binary struct {
	once sync.Once
	dir  string
	err  error
}

// Binary builds cmd/leasegate once per test process and returns its path,
// for tests that run the gateway as a process (rolling restarts, the PHP
// fixture). It builds with the race detector when the test binary has it,
// so that under the README's test command the build reuses the packages
// that command compiled and only links. RemoveBinary, from TestMain,
// deletes it. Without go on PATH the test is skipped (failed under
// CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	goBin := tooltest.Look(t, "the Go toolchain", "go")
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "leasegate-bin-"); binary.err != nil {
			return
		}
		args := []string{"build", "-o", filepath.Join(binary.dir, "leasegate")}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command(goBin, append(args, "github.com/leasegate/leasegate/cmd/leasegate")...).CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build ./cmd/leasegate: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatalf("build the gateway: %v", binary.err)
	}
	return filepath.Join(binary.dir, "leasegate")
}

// RemoveBinary deletes what Binary built; call it from TestMain.
func RemoveBinary() {
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
}
