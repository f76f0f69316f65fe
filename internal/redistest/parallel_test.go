package redistest

import (
	"flag"
	"io"
	"testing"
)

func TestRunRaisesParallelOnlyForTests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-test.run", "TestX"}, true},
		{[]string{"-test.fuzz", ""}, true},
		{[]string{"-test.parallel", "3"}, false},
		{[]string{"-test.fuzz", "^FuzzX$"}, false},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("test.parallel", 2, "")
		fs.String("test.fuzz", "", "")
		fs.String("test.run", "", "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := raiseParallel(fs); got != tc.want {
			t.Errorf("%q: raiseParallel = %v, want %v", tc.args, got, tc.want)
		}
	}
}
