package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/leasegate/leasegate/auth"
)

const keysUsage = `Usage:
  leasegate keys hash [flags] < key     print the SHA-256 of a key read from stdin
  leasegate keys hash --generate        make a new random key and print it with its hash

Only the hash goes into the key file (--api-keys-file) or --api-keys; the
key itself is given to the client and stored nowhere by the gateway.
With --name, --role and --tenant it also prints the whole entry.
`

func cmdKeys(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "hash" {
		fmt.Fprint(stderr, keysUsage)
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			return flag.ErrHelp
		}
		return usageError{errors.New("keys: want the subcommand hash")}
	}
	fs := flag.NewFlagSet("leasegate keys hash", flag.ContinueOnError)
	generate := fs.Bool("generate", false, "generate a new random key instead of reading one from stdin")
	name := fs.String("name", "", "key name, for printing a complete entry")
	role := fs.String("role", "", "client or ops, for printing a complete entry")
	tenant := fs.String("tenant", "", "tenant, for printing a complete entry")
	fs.Usage = func() { fmt.Fprint(stderr, keysUsage+"\nFlags:\n"); fs.PrintDefaults() }
	// keys hash reads no settings from the environment: a stray
	// LEASEGATE_NAME must not end up in a key entry.
	if err := parseFlags(fs, args[1:], func(string) string { return "" }, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("keys hash reads the key from stdin, not from arguments (they end up in shell history): got %q", fs.Args())}
	}
	var key string
	if *generate {
		k, err := auth.GenerateKey()
		if err != nil {
			return err
		}
		key = k
	} else {
		k, err := readKey(stdin)
		if err != nil {
			return err
		}
		key = k
	}
	if err := auth.ValidKey(key); err != nil {
		return usageError{err}
	}
	hash := auth.HashKey(key)
	entry := ""
	if *name != "" || *role != "" || *tenant != "" {
		entry = *name + ":" + *role + ":" + *tenant + ":" + hash
		if _, err := auth.ParseEntry(entry); err != nil {
			return usageError{fmt.Errorf("--name/--role/--tenant: %w", err)}
		}
	}
	if *generate {
		fmt.Fprintf(stdout, "key:    %s\n", key)
	}
	fmt.Fprintf(stdout, "sha256: %s\n", hash)
	if entry != "" {
		fmt.Fprintf(stdout, "entry:  %s\n", entry)
	}
	return nil
}

// readKey reads the first line of r, without its line ending.
func readKey(r io.Reader) (string, error) {
	line, err := bufio.NewReader(io.LimitReader(r, auth.MaxKeyLen+3)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("keys hash: read stdin: %w", err)
	}
	key := strings.TrimRight(line, "\r\n")
	if key == "" {
		return "", usageError{errors.New("keys hash: no key on stdin (pipe one in, or use --generate)")}
	}
	return key, nil
}
