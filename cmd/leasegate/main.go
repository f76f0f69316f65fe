// Command leasegate is the lock gateway and its client-side tools.
//
//	leasegate serve [flags]      run the gateway
//	leasegate abuse SUBCOMMAND   review flagged users (list, show, clear, ban, unban)
//	leasegate keys hash [flags]  hash (or --generate) an API key
//	leasegate lock [flags] RESOURCE -- CMD [ARGS...]
//	                             run CMD while holding a lock
//	leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]
//	                             run CMD holding one of N permits
//	leasegate elect [flags] NAME --candidate C -- CMD [ARGS...]
//	                             run CMD only while leading an election
//	leasegate healthcheck        exit 0 when the gateway answers /readyz
//	leasegate load [flags]       drive a (loopback) gateway with a bounded load
//	leasegate bench [flags]      the gateway's lock cycle side by side with go-redis
//	leasegate version            print version, commit and Go version (also --version)
//
// Every flag of every subcommand can also be set through the environment:
// --redis-url is LEASEGATE_REDIS_URL, and so on (flags win).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/leasegate/leasegate/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const usage = `leasegate: a Redis-native lock gateway

Usage:
  leasegate serve [flags]        run the gateway (embedded Redis unless --redis-url)
  leasegate abuse list|show|clear|ban|unban   review flagged users (ops)
  leasegate audit [flags]        the audit trail of operator actions (ops)
  leasegate watch RESOURCE       print the changes of a lock as they happen
  leasegate keys hash [flags]    hash an API key for the key file (docs/auth.md)
  leasegate lock [flags] RESOURCE -- CMD [ARGS...]
                                 run CMD holding the lock on RESOURCE, with its
                                 fencing token in LEASEGATE_TOKEN
  leasegate semaphore [flags] NAME --limit N -- CMD [ARGS...]
                                 run CMD holding one of the N permits of NAME
  leasegate elect [flags] NAME --candidate C [--value V] -- CMD [ARGS...]
                                 run CMD only while leading election NAME, with
                                 its term in LEASEGATE_TERM
  leasegate healthcheck [flags]  exit 0 when the gateway's /readyz answers 2xx (containers)
  leasegate load [flags]         drive a loopback gateway with a bounded load; print
                                 throughput, latency percentiles and a fencing check
  leasegate bench [flags]        lock cycles through an in-process gateway side by side
                                 with the same steps done directly with go-redis
  leasegate version              print the version, commit and Go version (also --version)
  leasegate help                 this text

Run "leasegate COMMAND -h" for a command's flags. Every flag can also be set
from the environment as LEASEGATE_<FLAG>, e.g. --redis-url is LEASEGATE_REDIS_URL.
`

// run is main without the process: tests call it with their own args,
// streams and environment.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr, getenv)
	case "abuse":
		err = cmdAbuse(ctx, args[1:], stdout, stderr, getenv)
	case "audit":
		err = cmdAudit(ctx, args[1:], stdout, stderr, getenv)
	case "watch":
		err = cmdWatch(ctx, args[1:], stdout, stderr, getenv)
	case "keys":
		err = cmdKeys(args[1:], stdin, stdout, stderr)
	case "lock":
		err = cmdLock(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "semaphore":
		err = cmdSemaphore(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "elect":
		err = cmdElect(ctx, args[1:], stdin, stdout, stderr, getenv)
	case "healthcheck":
		err = cmdHealthcheck(ctx, args[1:], stdout, stderr, getenv)
	case "load":
		err = cmdLoad(ctx, args[1:], stdout, stderr, getenv)
	case "bench":
		err = cmdBench(ctx, args[1:], stdout, stderr, getenv)
	case "version", "--version", "-version":
		err = cmdVersion(args[1:], stdout, stderr, getenv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "leasegate: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	return exitCode(err, stderr)
}

// usageError marks bad command-line input (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitError carries a specific exit status (e.g. a wrapped command's).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, message(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, message(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, server.ErrConfig) {
		return 2
	}
	return 1
}

// message is msg with the program name in front, once: errors from the
// client package already start with "leasegate: ".
func message(msg string) string {
	return "leasegate: " + strings.TrimPrefix(msg, "leasegate: ")
}
