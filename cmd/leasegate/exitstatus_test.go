package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exitRow is one row of the "Exit status" table of docs/configuration.md.
type exitRow struct {
	status  int
	when    string
	example string
}

func documentedExitStatuses(t *testing.T) []exitRow {
	t.Helper()
	f, err := os.Open(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	row := regexp.MustCompile("^\\| ([0-9]+) \\| (.*) \\| (?:`(.*)`)? ?\\|$")
	var rows []exitRow
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "### Exit status":
			in = true
		case in && strings.HasPrefix(line, "#"):
			in = false
		case in:
			if m := row.FindStringSubmatch(line); m != nil {
				n, _ := strconv.Atoi(m[1])
				rows = append(rows, exitRow{n, m[2], m[3]})
			}
		}
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no exit status table", configDoc)
	}
	return rows
}

// TestEveryDocumentedExitStatusIsWhatServeReturns runs `leasegate serve`
// (run, the command without the process) into each row of the exit status
// table in docs/configuration.md, and fails when a row has no case.
func TestEveryDocumentedExitStatusIsWhatServeReturns(t *testing.T) {
	t.Parallel()
	rows := documentedExitStatuses(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	emptyKeys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(emptyKeys, []byte("# no keys yet\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		row     int // index into the table
		args    []string
		env     map[string]string
		example bool // stderr is the row's example message, exactly
	}{
		{"a clean stop exits 0", 0, []string{"--addr", "127.0.0.1:0"}, nil, false},
		{"-h exits 0", 0, []string{"-h"}, nil, false},
		{"a duration that does not parse exits 2", 1, nil, map[string]string{"LEASEGATE_MAX_TTL": "soon"}, true},
		{"an unknown flag exits 2", 1, []string{"--nope"}, nil, false},
		{"a stray argument exits 2", 1, []string{"extra"}, nil, false},
		{"a bad log level exits 2", 1, []string{"--log-level", "loud"}, nil, false},
		{"max-ttl below 1s exits 2", 2, []string{"--addr", "127.0.0.1:0", "--max-ttl", "1ms"}, nil, true},
		{"write-timeout not above max-wait exits 2", 2, []string{"--addr", "127.0.0.1:0", "--write-timeout", "10s", "--max-wait", "10s"}, nil, false},
		{"a URL and a Cluster together exit 2", 2, []string{"--addr", "127.0.0.1:0", "--redis-url", "redis://127.0.0.1:1", "--redis-cluster-addrs", "127.0.0.1:2"}, nil, false},
		{"no keys on a public address exits 2", 2, []string{"--addr", "0.0.0.0:0"}, nil, false},
		{"the embedded Redis on a public address exits 2", 2, []string{"--addr", "127.0.0.1:0", "--embedded-redis-addr", "0.0.0.0:0"}, nil, false},
		{"a key file with no key exits 2", 2, []string{"--addr", "127.0.0.1:0", "--api-keys-file", emptyKeys}, nil, false},
		{"a missing key file exits 2", 2, []string{"--addr", "127.0.0.1:0", "--api-keys-file", emptyKeys + ".missing"}, nil, false},
		{"a missing policy file exits 2", 2, []string{"--addr", "127.0.0.1:0", "--abuse-policy-file", emptyKeys + ".missing"}, nil, false},
		{"a taken listen address exits 1", 3, []string{"--addr", taken.Addr().String()}, nil, false},
		{"a taken embedded Redis address exits 1", 3, []string{"--addr", "127.0.0.1:0", "--embedded-redis-addr", taken.Addr().String()}, nil, false},
	}
	covered := make([]bool, len(rows))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.row >= len(rows) {
				t.Fatalf("row %d: the table has %d rows", tc.row, len(rows))
			}
			covered[tc.row] = true
			want := rows[tc.row]
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a gateway that starts stops at once, as on SIGTERM
			r := runCLIContext(ctx, t, tc.env, append([]string{"serve"}, tc.args...)...)
			if r.code != want.status {
				t.Errorf("got exit %d, want %d (%s); stderr %q", r.code, want.status, want.when, r.stderr)
			}
			if r.code != 0 {
				checkOneMessage(t, r.stderr)
			}
			if tc.example {
				if got := strings.TrimSpace(r.stderr); got != want.example {
					t.Errorf("got stderr %q, want the documented %q", got, want.example)
				}
			}
		})
	}
	for i, ok := range covered {
		if !ok {
			t.Errorf("no case runs exit status row %d of %s (%d: %s)", i, configDoc, rows[i].status, rows[i].when)
		}
	}
}

// checkOneMessage: a failure ends with one line naming the program once
// (the flag package prints the usage before it on a bad flag).
func checkOneMessage(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "leasegate: ") || strings.Contains(stderr, "leasegate: leasegate:") {
		t.Errorf("got stderr %q, want it to end with one line starting %q, the program named once", stderr, "leasegate: ")
	}
}

func runCLIContext(ctx context.Context, t *testing.T, env map[string]string, args ...string) cliResult {
	t.Helper()
	var out, errb strings.Builder
	code := run(ctx, args, strings.NewReader(""), &out, &errb, func(k string) string { return env[k] })
	return cliResult{code: code, stdout: out.String(), stderr: errb.String()}
}

func TestClientErrorsNameTheProgramOnce(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"abuse", "list", "--url", "http://127.0.0.1:1"},
		{"abuse", "show", "nobody", "--url", startGateway(t)},
	} {
		r := runCLI(t, nil, args...)
		if r.code != 1 {
			t.Errorf("%q: got exit %d, want 1", args, r.code)
		}
		checkOneMessage(t, r.stderr)
	}
}

func TestAbuseBanNeedsADuration(t *testing.T) {
	t.Parallel()
	url := startGateway(t)
	r := runCLI(t, nil, "abuse", "ban", "bob", "--url", url)
	if r.code != 2 || !strings.Contains(r.stderr, "--for") {
		t.Fatalf("got exit %d, stderr %q; want 2 naming --for", r.code, r.stderr)
	}
	show := runCLI(t, nil, "abuse", "show", "bob", "--url", url)
	if show.code != 1 || !strings.Contains(show.stderr, "404") {
		t.Errorf("got exit %d, stderr %q after a refused ban; want bob unknown (404)", show.code, show.stderr)
	}
	r = runCLI(t, nil, "abuse", "ban", "bob", "--url", url, "--for", "2h")
	if r.code != 0 || !strings.Contains(r.stdout, "banned bob until") {
		t.Errorf("got exit %d, stdout %q, stderr %q; want the ban", r.code, r.stdout, r.stderr)
	}
}

func TestVersionPrintsVersionCommitAndGo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runCLI(t, nil, args...)
		if r.code != 0 || !regexp.MustCompile(`^leasegate \S+ \(commit \S+, go\S+\)\n$`).MatchString(r.stdout) {
			t.Errorf("%q: got exit %d, stdout %q; want leasegate VERSION (commit C, goX)", args, r.code, r.stdout)
		}
	}
	r := runCLI(t, nil, "version", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"commit":`) || !strings.Contains(r.stdout, `"go_version":"go`) {
		t.Errorf("got exit %d, stdout %q; want JSON with commit and go_version", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "version", "extra"); r.code != 2 {
		t.Errorf("got exit %d for a stray argument, want 2", r.code)
	}
}
