package leasegate_test

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/leasegate/leasegate"

// projectImports maps each package of the module (by its path below the
// module, "" for the root) to the project packages its non-test files
// import.
func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		// A directory with a go.mod of its own (tools/bench) is another
		// module: not ours to check, as go build ./... does not build it.
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel := filepath.ToSlash(path)
		if rel == "." {
			rel = ""
		}
		var mine []string
		for _, imp := range pkg.Imports {
			if imp == module {
				mine = append(mine, "")
			} else if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				mine = append(mine, p)
			}
		}
		out[rel] = mine
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestImportGraph keeps the arrows of docs/architecture.md pointing down
// to the domain.
func TestImportGraph(t *testing.T) {
	t.Parallel()
	graph := projectImports(t)
	if len(graph) < 8 {
		t.Fatalf("got %d packages, want the whole module", len(graph))
	}
	if imps := graph[""]; len(imps) != 0 {
		t.Errorf("the domain package imports %v, want nothing of the project", imps)
	}
	for pkg, imps := range graph {
		// internal/apptest is test scaffolding: the gateway in process;
		// opsui is the HTML face of the same routes.
		if slices.Contains(imps, "handlers") && pkg != "server" && !strings.HasPrefix(pkg, "cmd/") && pkg != "internal/apptest" && pkg != "opsui" {
			t.Errorf("%s imports handlers; only server, cmd and opsui may", pkg)
		}
		// bench is the load and benchmark tool: a top, like cmd.
		if slices.Contains(imps, "bench") && !strings.HasPrefix(pkg, "cmd/") {
			t.Errorf("%s imports bench; only cmd may", pkg)
		}
		if slices.Contains(imps, "internal/apptest") {
			t.Errorf("%s imports internal/apptest outside its tests", pkg)
		}
	}
	never := map[string][]string{
		"handlers":  {"redislock", "abuse", "auth", "server", "opsui"},
		"opsui":     {"redislock", "abuse", "auth", "server"},
		"auth":      {"handlers", "redislock", "abuse", "server"},
		"abuse":     {"redislock", "handlers"},
		"redislock": {"abuse", "handlers"},
		"client":    {"handlers", "server", "redislock", "abuse", "auth"},
		// redisconn returns values that server wires; it never reaches back.
		"redisconn": {"server", "handlers", "redislock", "abuse", "auth", "opsui", "semaphore", "election", "claim", "webhook"},
	}
	for pkg, banned := range never {
		for _, b := range banned {
			if slices.Contains(graph[pkg], b) {
				t.Errorf("%s imports %s", pkg, b)
			}
		}
	}
}

// TestTheDomainSpeaksNoHTTP: the root package is the vocabulary; problem
// documents, statuses and context keys belong to the HTTP side (api,
// handlers), so neither net/http nor Echo may come back into it.
func TestTheDomainSpeaksNoHTTP(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "net/http") || strings.HasPrefix(imp, "github.com/labstack/echo") {
			t.Errorf("the domain package imports %s; the wire belongs to api or handlers", imp)
		}
	}
}

// TestHandlersHoldNoHTMLUI: the JSON routes are handlers, the ops page is
// opsui. A template or an embedded page asset back in handlers means the
// page is growing there again.
func TestHandlersHoldNoHTMLUI(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir("handlers", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "html/template" || imp == "embed" {
			t.Errorf("handlers imports %s; the ops page's templates and assets belong to opsui", imp)
		}
	}
	if len(pkg.EmbedPatterns) > 0 {
		t.Errorf("handlers embeds %v; the ops page's assets belong to opsui", pkg.EmbedPatterns)
	}
	if _, err := os.Stat("handlers/opspage"); err == nil {
		t.Error("handlers/opspage exists; the ops page's templates belong to opsui")
	}
}

// TestAuthTestsDoNotBuildTheGateway: auth's own tests are unit tests of
// keys and sessions; the wiring tests of auth in front of the routes live
// in server, so auth does not depend on handlers even in tests.
func TestAuthTestsDoNotBuildTheGateway(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir("auth", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range append(pkg.TestImports, pkg.XTestImports...) {
		for _, banned := range []string{"handlers", "server", "internal/apptest", "redislock", "abuse"} {
			if imp == module+"/"+banned {
				t.Errorf("auth's tests import %s", banned)
			}
		}
	}
}

// TestEveryFuzzTargetRunsInCI: .ci/fuzz (which .ci/run calls for a smoke
// run) fuzzes each target; a new FuzzX that is not listed there would
// only ever run its seed corpus.
func TestEveryFuzzTargetRunsInCI(t *testing.T) {
	t.Parallel()
	ci, err := os.ReadFile(".ci/fuzz")
	if err != nil {
		t.Fatal(err)
	}
	fuzz := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	n := 0
	err = filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range fuzz.FindAllSubmatch(src, -1) {
			n++
			line := regexp.MustCompile(`(?m)^\./` + regexp.QuoteMeta(filepath.ToSlash(filepath.Dir(path))) + ` ` + string(m[1]) + `$`)
			if !line.Match(ci) {
				t.Errorf("%s (%s) is not fuzzed in .ci/fuzz; add the line ./%s %s", m[1], path, filepath.ToSlash(filepath.Dir(path)), m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("found no fuzz targets")
	}
}

// TestFixturesAreNamedAsFixtures: a package whose non-test files import
// testing is test scaffolding, and is named as such (httptest, iotest):
// its name ends in "test", so that nobody mistakes it for production code.
func TestFixturesAreNamedAsFixtures(t *testing.T) {
	t.Parallel()
	n := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		if slices.Contains(pkg.Imports, "testing") {
			n++
			if !strings.HasSuffix(pkg.Name, "test") {
				t.Errorf("package %s (%s) imports testing outside its tests: name it as a fixture (…test)", pkg.Name, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("found %d fixture packages, want the internal ones (apptest, redistest, …)", n)
	}
}

// TestOnlyCmdCatchesSignals: OS signals belong to the process, so only
// cmd subscribes to them; server takes a context and trigger channels.
func TestOnlyCmdCatchesSignals(t *testing.T) {
	t.Parallel()
	for pkg := range projectImports(t) {
		if strings.HasPrefix(pkg, "cmd/") {
			continue
		}
		p, err := build.ImportDir(filepath.FromSlash("./"+pkg), 0)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(p.Imports, "os/signal") {
			t.Errorf("%s imports os/signal; only cmd may", pkg)
		}
	}
}
