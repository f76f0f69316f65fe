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
// WaitBoundParallelism unless the command line gives one, and returns
// the exit code.
func Run(m *testing.M) int {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
		}
	})
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(WaitBoundParallelism)); err != nil {
			panic(err)
		}
	}
	return m.Run()
}
