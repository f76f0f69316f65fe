package main

import (
	"bufio"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/server"
)

const (
	configDoc        = "../../docs/configuration.md"
	serveSection     = "## `leasegate serve`"
	flagTableHeader  = "| flag | env | default | meaning |"
	emptyDefaultCell = "(empty)"
)

// flagRow is one row of a flag table in docs/configuration.md.
type flagRow struct {
	line                         int
	flag, env, defValue, meaning string
}

// readFlagTable returns the rows of the flag table in section (a "## "
// heading line) of the Markdown file at path.
func readFlagTable(t *testing.T, path, section string) []flagRow {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	defer f.Close()

	var rows []flagRow
	inSection, inTable, sawHeader := false, false, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "## "):
			if inSection {
				return checkedRows(t, path, section, rows, sawHeader)
			}
			inSection = line == section
		case !inSection:
		case line == flagTableHeader:
			if sawHeader {
				t.Fatalf("%s:%d: a second flag table in %q; append rows to the first", path, n, section)
			}
			sawHeader, inTable = true, true
		case inTable && strings.HasPrefix(line, "| ---"):
		case inTable && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			if len(cells) != 4 {
				t.Errorf("%s:%d: got %d cells, want 4 (flag, env, default, meaning): %s", path, n, len(cells), line)
				continue
			}
			rows = append(rows, flagRow{
				line:     n,
				flag:     codeSpan(cells[0]),
				env:      codeSpan(cells[1]),
				defValue: codeSpan(cells[2]),
				meaning:  strings.TrimSpace(cells[3]),
			})
		case inTable:
			inTable = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return checkedRows(t, path, section, rows, sawHeader)
}

func checkedRows(t *testing.T, path, section string, rows []flagRow, sawHeader bool) []flagRow {
	t.Helper()
	if !sawHeader {
		t.Fatalf("%s: section %q has no table headed %q", path, section, flagTableHeader)
	}
	return rows
}

// codeSpan returns a cell's text without the backticks around it.
func codeSpan(cell string) string {
	s := strings.TrimSpace(cell)
	if len(s) >= 2 && strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`") {
		s = s[1 : len(s)-1]
	}
	return s
}

// sameDefault reports whether a documented default is the flag's: equal
// text, the same duration written shorter (2m for 2m0s), or (empty).
func sameDefault(doc, real string) bool {
	if doc == emptyDefaultCell {
		doc = ""
	}
	if doc == real {
		return true
	}
	d1, err1 := time.ParseDuration(doc)
	d2, err2 := time.ParseDuration(real)
	return err1 == nil && err2 == nil && d1 == d2
}

// serveFlagSet is the flag set `leasegate serve` parses, as cmdServe
// builds it.
func serveFlagSet() *flag.FlagSet {
	cfg := server.DefaultConfig()
	level := "info" // cmdServe's default log level
	fs := flag.NewFlagSet("leasegate serve", flag.ContinueOnError)
	serveFlags(fs, &cfg, &level)
	return fs
}

// TestConfigurationDocListsEveryServeFlag keeps docs/configuration.md true:
// every serve flag has a row with its environment variable and default,
// and every row names a real flag, once.
func TestConfigurationDocListsEveryServeFlag(t *testing.T) {
	t.Parallel()
	fs := serveFlagSet()
	rows := readFlagTable(t, configDoc, serveSection)

	documented := map[string]flagRow{}
	for _, r := range rows {
		name, ok := strings.CutPrefix(r.flag, "--")
		if !ok {
			t.Errorf("%s:%d: got flag cell %q, want it written as `--name`", configDoc, r.line, r.flag)
			continue
		}
		if prev, dup := documented[name]; dup {
			t.Errorf("%s:%d: --%s is documented twice (first on line %d)", configDoc, r.line, name, prev.line)
			continue
		}
		documented[name] = r
		if fs.Lookup(name) == nil {
			t.Errorf("%s:%d: --%s is documented but `leasegate serve` has no such flag", configDoc, r.line, name)
		}
		if r.meaning == "" {
			t.Errorf("%s:%d: --%s has no meaning", configDoc, r.line, name)
		}
	}

	fs.VisitAll(func(f *flag.Flag) {
		r, ok := documented[f.Name]
		if !ok {
			t.Errorf("--%s (%s) is not documented in %s", f.Name, f.Usage, configDoc)
			return
		}
		if want := envName(f.Name); r.env != want {
			t.Errorf("%s:%d: --%s: got env %q, want %q", configDoc, r.line, f.Name, r.env, want)
		}
		if !sameDefault(r.defValue, f.DefValue) {
			want := f.DefValue
			if want == "" {
				want = emptyDefaultCell
			}
			t.Errorf("%s:%d: --%s: got default %q, want %q", configDoc, r.line, f.Name, r.defValue, want)
		}
	})
}

func TestSameDefaultReadsTheDocsConventions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc, real string
		want      bool
	}{
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"(empty)", "", true},
		{"2m", "2m0s", true},
		{"24h", "24h0m0s", true},
		{"1m", "2m0s", false},
		{"lg", "lg:", false},
		{"", "info", false},
		{"16384", "16384", true},
	}
	for _, tc := range tests {
		if got := sameDefault(tc.doc, tc.real); got != tc.want {
			t.Errorf("sameDefault(%q, %q): got %v, want %v", tc.doc, tc.real, got, tc.want)
		}
	}
}
