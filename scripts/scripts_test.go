package scripts

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// TestEveryFileIsRegistered: each embedded .lua file is a script in
// ByName under its file name, and ByName names nothing else.
func TestEveryFileIsRegistered(t *testing.T) {
	files, err := fs.Glob(lua, "*.lua")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(f, ".lua"))
	}
	var got []string
	for name := range ByName() {
		got = append(got, name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("got ByName %v, want the files %v", got, want)
	}
	if len(got) == 0 {
		t.Error("got no scripts, want the embedded files")
	}
}
