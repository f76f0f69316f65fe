package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/internal/tooltest"
)

// The docs check for PHP: every ```php block of README.md and docs/*.md
// runs with the real PHP (Debian's CLI settings) against a gateway of
// its own, after testdata/docs_prelude.php (the package, Debian's
// framework autoloaders, and made-up stand-ins for the app's functions
// and variables); it must exit 0 without a notice or warning. A block
// that cannot run outside an app (a config fragment, a framework's
// router) is marked <!-- docs-check: skip (why) --> as the shell blocks
// are.

type phpBlock struct {
	file string
	line int
	skip bool
	code string
}

// phpBlocks reads the ```php blocks of one markdown file.
func phpBlocks(t *testing.T, file string) []phpBlock {
	t.Helper()
	var blocks []phpBlock
	for _, b := range fencedBlocks(t, file) {
		if b.lang == "php" {
			blocks = append(blocks, phpBlock{file: b.file, line: b.line, skip: b.mark == "skip", code: strings.Join(b.lines, "\n")})
		}
	}
	return blocks
}

func TestDocsPHPExamplesRun(t *testing.T) {
	t.Parallel()
	php := tooltest.Look(t, "Debian's php-cli package", "php")
	prelude, err := filepath.Abs("testdata/docs_prelude.php")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, file := range docFiles(t) {
		var run []phpBlock
		for _, b := range phpBlocks(t, file) {
			if !b.skip {
				run = append(run, b)
			}
		}
		if len(run) == 0 {
			continue
		}
		ran += len(run)
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			port, _ := docsGateway(t, "")
			for _, b := range run {
				script := filepath.Join(t.TempDir(), "example.php")
				src := "<?php require " + strconv.Quote(prelude) + ";\n" + b.code + "\n"
				if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cmd := exec.CommandContext(ctx, php, "-d", "variables_order=GPCS", "-d", "error_reporting=-1",
					"-d", "display_errors=stderr", script)
				cmd.Env = append(os.Environ(), "LEASEGATE_URL=http://127.0.0.1:"+port, "LEASEGATE_API_KEY=")
				out, err := cmd.CombinedOutput()
				cancel()
				if err != nil {
					t.Errorf("%s:%d: the PHP example fails: %v\n%s\n--- the example:\n%s", b.file, b.line, err, firstLines(out, 20), b.code)
				}
			}
		})
	}
	if ran < 5 {
		t.Errorf("ran %d PHP examples from the docs, want README.md's and docs/php.md's at least", ran)
	}
}

// firstLines is at most n lines of out.
func firstLines(out []byte, n int) string {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for i := 0; i < n && sc.Scan(); i++ {
		b.WriteString(sc.Text() + "\n")
	}
	return b.String()
}
