package tooltest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestAMissingToolIsShownWithoutVerbose runs `go test` (no -v) on a test
// that calls Missing and checks the skip line reaches go test's output;
// under CI=true the same test must fail.
func TestAMissingToolIsShownWithoutVerbose(t *testing.T) {
	if os.Getenv("TOOLTEST_CHILD") == "1" {
		t.Skip("the child run is TestChildNeedsAMissingTool")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go not on PATH: %v", err)
	}
	for _, tc := range []struct {
		name, ci string
		wantErr  bool
		want     string
	}{
		{"elsewhere it skips and says so", "", false, "--- SKIP: TestChildNeedsAMissingTool: tooltest-no-such-tool not found on PATH (apt-get install nothing)"},
		{"under CI=true it fails", "true", true, "CI=true: a missing tool is a failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(goBin, "test", "-count=1", "-run", "^TestChildNeedsAMissingTool$", ".")
			cmd.Env = append(os.Environ(), "TOOLTEST_CHILD=1", "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if (err != nil) != tc.wantErr {
				t.Fatalf("go test: got err %v, want failure %v\n%s", err, tc.wantErr, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("go test output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

func TestChildNeedsAMissingTool(t *testing.T) {
	if os.Getenv("TOOLTEST_CHILD") != "1" {
		t.Skip("run by TestAMissingToolIsShownWithoutVerbose")
	}
	Look(t, "apt-get install nothing", "tooltest-no-such-tool")
}
