package api_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/leasegate/leasegate/internal/tooltest"
)

// TestOpenAPIPassesTheLinter runs Spectral (the reference linter of the
// Spectral rulesets) on openapi.yaml with .spectral.yaml: every rule of
// spectral:oas and Redocly's operation-4xx-response; the rules turned off
// say why there. Any finding, down to a hint, fails. .ci/run installs
// Spectral (npm ci --prefix .ci/spectral); elsewhere the test is skipped
// without it, and fails under CI=true.
func TestOpenAPIPassesTheLinter(t *testing.T) {
	t.Parallel()
	spectral, err := filepath.Abs("../.ci/spectral/node_modules/.bin/spectral")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spectral); err != nil {
		spectral = tooltest.Look(t, "npm ci --prefix .ci/spectral", "spectral")
	}
	out, err := exec.Command(spectral, "lint", "--fail-severity=hint", "--ruleset", ".spectral.yaml", "openapi.yaml").CombinedOutput()
	if err != nil {
		t.Fatalf("spectral lint openapi.yaml: %v\n%s", err, out)
	}
}
