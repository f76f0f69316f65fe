package leasegatetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/tooltest"
)

// TestTheExampleServiceModulePasses runs the tests of examples/go, a
// service in a module of its own that uses only the public packages and
// leasegatetest, as a team's would: once on the embedded store and once
// on a redis-server (REDIS_URL). `go test ./...` here does not enter a
// nested module, so this test does; the module cache of this build
// serves it (GOPROXY=off), and the replace directive points it at this
// checkout.
func TestTheExampleServiceModulePasses(t *testing.T) {
	t.Parallel()
	goBin := tooltest.Look(t, "the Go toolchain", "go")
	dir, err := filepath.Abs(filepath.Join("..", "examples", "go"))
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	cmd := exec.Command(goBin, "test", "-race", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"),
		"GOPROXY=off", "GOWORK=off", "REDIS_URL="+srv.URL())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in examples/go: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok  \texample.com/rewards") {
		t.Fatalf("go test in examples/go ran no test:\n%s", out)
	}
}
