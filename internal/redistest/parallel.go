package redistest

import (
	"flag"
	"strconv"
	"testing"
)

// WaitBoundParallelism is how many parallel tests a package of
// Redis-backed tests runs at once unless -parallel is given: its tests
// mostly wait (for TTLs, Redis processes, timers), not compute, so the
// default of GOMAXPROCS (2 on a CI machine) leaves the cores idle.
const WaitBoundParallelism = 8

// Run runs a package's tests (call it from TestMain) with -parallel
// WaitBoundParallelism unless the command line gives one or fuzzes, and
// returns the exit code.
func Run(m *testing.M) int {
	flag.Parse()
	if raiseParallel(flag.CommandLine) {
		if err := flag.Set("test.parallel", strconv.Itoa(WaitBoundParallelism)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}

// raiseParallel reports whether Run sets -test.parallel: not when the
// command line gives it, nor when it fuzzes (-test.fuzz), where it is the
// number of fuzzing worker processes. Those compute: more of them than
// cores only slows each down, and a short run (the CI's one second) was
// over before the eight workers had replayed the corpus.
func raiseParallel(fs *flag.FlagSet) bool {
	raise := true
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" || f.Name == "test.fuzz" && f.Value.String() != "" {
			raise = false
		}
	})
	return raise
}
