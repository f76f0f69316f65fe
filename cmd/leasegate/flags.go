package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// envName is the environment variable of a flag: --redis-url is
// LEASEGATE_REDIS_URL.
func envName(flagName string) string {
	return "LEASEGATE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseCommand parses the flags of a sub-command that takes no
// arguments: usage is printed before the flag list on -h or a bad flag,
// and validate (the config's own check, a closure so that it sees the
// parsed values) turns its error into a usage error (exit status 2).
func parseCommand(fs *flag.FlagSet, usage string, args []string, getenv func(string) string, stderr io.Writer, validate func() error) error {
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, getenv, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// parseFlags applies the environment to every flag of fs, then the
// command line, so a flag beats its variable. Bad values in either are
// usage errors naming where they came from.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if envErr != nil {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = usageError{fmt.Errorf("%s=%q: invalid value for --%s: %w", envName(f.Name), v, f.Name, err)}
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	prev := fs.Usage
	fs.Usage = func() {
		if prev != nil {
			prev()
		}
		fmt.Fprintln(stderr, "\nEvery flag can also be set as LEASEGATE_<FLAG> in the environment, e.g. --redis-url as LEASEGATE_REDIS_URL.")
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return usageError{err}
	}
	return nil
}

// listFlag is a comma-separated list flag bound to *p; blanks around an
// item and empty items are dropped. Each Set replaces the list, so the
// command line overrides the environment instead of adding to it; with
// add, a repeatable flag, values add up instead.
type listFlag struct {
	p   *[]string
	add bool
}

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listFlag) Set(s string) error {
	var out []string
	if l.add {
		out = *l.p
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	*l.p = out
	return nil
}
