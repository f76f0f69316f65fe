// Package tooltest decides, for the whole module, what a test does when a
// tool it needs (redis-server, chromium, Spectral, php, ...) is missing:
// under CI=true it fails, because CI installs every tool (.ci/run);
// elsewhere it skips, and says so where `go test ./...` shows it.
package tooltest

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Look returns the path of the first of names found on PATH. When none is,
// the test ends as Missing says; install tells how to get the tool (a
// Debian package, an npm command).
func Look(t testing.TB, install string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "%s not found on PATH (%s)", strings.Join(names, " or "), install)
	return ""
}

// Missing ends the test for a missing tool: a failure under CI=true, a
// skip elsewhere. `go test ./...` prints nothing of a passing package but
// its "ok" line, so a skip also writes one line to the go command's own
// standard error (the test binary's parent), where it shows without -v.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; CI=true: a missing tool is a failure", msg)
	}
	if !testing.Verbose() {
		announce(parentStderr(), fmt.Sprintf("--- SKIP: %s: %s", t.Name(), msg))
	}
	t.Skip(msg)
}

// parentStderr opens the standard error of the process that started the
// test binary: the go command's, which reaches the terminal or CI log.
// Where it cannot be opened (not Linux, a socket) the binary's own is
// used, which go test shows only with -v or on failure.
func parentStderr() io.WriteCloser {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/2", os.Getppid()), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nopCloser{os.Stderr}
	}
	return f
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func announce(w io.WriteCloser, line string) {
	_, _ = fmt.Fprintln(w, line)
	_ = w.Close()
}
