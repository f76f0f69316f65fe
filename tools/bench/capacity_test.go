package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The page's tables are generated from the committed measurement: a
// change to either, or to the model, shows here until the page is
// regenerated (docs/capacity.md says how).
func TestCapacityPageMatchesTheCommittedMeasurement(t *testing.T) {
	t.Parallel()
	rep, err := ReadCapacity("testdata/capacity.json")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("../../docs/capacity.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := rep.UpdateDoc(string(page))
	if err != nil {
		t.Fatal(err)
	}
	if string(page) != want {
		t.Errorf("docs/capacity.md's tables differ from bench/testdata/capacity.json's; regenerate them:\n" +
			"  go -C tools/bench generate")
	}
	for _, p := range rep.Predictions() {
		if p.Measured <= 0 || p.Predicted <= 0 || p.ModelCPU <= 0 {
			t.Errorf("%s %s: got measured %.0f, predicted %.0f cycles/s, model CPU %.0f µs; want all positive",
				p.Topology, p.Phase, p.Measured, p.Predicted, p.ModelCPU)
		}
	}
	if !strings.Contains(want, "| 1 M |") {
		t.Errorf("the sizing table has no 1 M row")
	}
}

// TestLinksIntoTheBenchmarkPagesResolve: every link to a section of
// docs/benchmarks.md or docs/capacity.md, from the docs, the README and
// CONTRIBUTING.md or within the two pages, names a heading they have
// (GitHub's anchors: lower case, punctuation dropped, spaces to hyphens).
func TestLinksIntoTheBenchmarkPagesResolve(t *testing.T) {
	t.Parallel()
	anchors := map[string]map[string]bool{}
	for _, page := range []string{"benchmarks.md", "capacity.md"} {
		data, err := os.ReadFile("../../docs/" + page)
		if err != nil {
			t.Fatal(err)
		}
		anchors[page] = map[string]bool{}
		for line := range strings.Lines(string(data)) {
			if h, ok := strings.CutPrefix(line, "#"); ok {
				anchors[page][slug(strings.TrimLeft(h, "#"))] = true
			}
		}
	}
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	link := regexp.MustCompile(`\]\(((?:[a-z./]*/)?(benchmarks|capacity)\.md)?#([^)\s]+)\)`)
	for _, f := range append(files, "../../README.md", "../../CONTRIBUTING.md") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			page := m[2] + ".md"
			if m[1] == "" { // a link within the page itself
				page = filepath.Base(f)
			}
			if as, ok := anchors[page]; ok && !as[m[3]] {
				t.Errorf("%s: link to %s#%s: no such heading", f, page, m[3])
			}
		}
	}
}

// slug is GitHub's anchor of a heading's text.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
