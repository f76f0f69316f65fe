package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/leasegate/leasegate/server"
)

// cmdVersion prints which build this is: the version (-ldflags
// server.Version, or the module version of a go install), the VCS commit
// (-ldflags server.Commit, or what go build recorded in a git checkout)
// and the Go version. /metrics exports the same as leasegate_build_info.
func cmdVersion(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("leasegate version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("version takes no arguments, got %q", fs.Args())}
	}
	bi := server.Build()
	if *asJSON {
		return json.NewEncoder(stdout).Encode(bi)
	}
	_, err := fmt.Fprintf(stdout, "leasegate %s (commit %s, %s)\n", bi.Version, bi.Commit, bi.GoVersion)
	return err
}
