package gatewaytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Binary builds cmd/leasegate into a temporary directory of t and
// returns its path, for tests that run the gateway as a process (the PHP
// fixture's). It builds with the race detector when the test binary has
// it, so that under the README's test command the build reuses the
// packages that command compiled and only links. Without go on PATH the
// test is skipped (failed under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go not found on PATH (CI=true: this is a failure): %v", err)
		}
		t.Skipf("go not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "leasegate")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command(goBin, append(args, "github.com/leasegate/leasegate/cmd/leasegate")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/leasegate: %v\n%s", err, out)
	}
	return bin
}
