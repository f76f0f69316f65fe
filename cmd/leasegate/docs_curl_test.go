package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/tooltest"
	"github.com/leasegate/leasegate/server"
)

// The docs check: every curl command (or for loop of one) in a ```sh
// block of README.md and docs/*.md runs, with bash and the real curl, against a gateway started
// in-process, and must print what the comment right under it says.
//
// How a doc writes one (the conventions this test reads):
//
//   - The gateway is at localhost:$PORT (PORT is set for the command).
//   - The expected answer is the comment lines right under the command,
//     one per line of output; a line starting "#   " continues the one
//     before it. In the expected text "..." matches anything; timestamps,
//     decimals and numbers of four digits or more (tokens,
//     retry_after_ms) match any such value, smaller integers (statuses,
//     attempts) must be equal; "after N s" (curl's -w '%{time_total}')
//     must be within a second of the time the command took.
//   - A command with no expected answer fails the check.
//   - An HTML comment "<!-- docs-check: skip (why) -->" right before the
//     block leaves its commands out (Docker, a remote host); the reason
//     is required. "<!-- docs-check: keys ... -->" runs them against a
//     gateway with API keys, with KEY set to a client key of tenant shop;
//     "<!-- docs-check: test-clock -->" against one started with
//     --embedded-redis-test-clock (docs/testing.md).
//   - The commands of one file run in order against one gateway per mode,
//     so a doc's session (acquire, contend, release) is checked as told.

type curlCmd struct {
	file, mode string
	line       int
	cmd        string
	expected   []string
}

var (
	docsCheckMark = regexp.MustCompile(`^<!-- docs-check: (skip|keys|test-clock)\b(.*)-->$`)
)

func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, files...)
}

// fencedBlock is one fenced code block of a markdown file: its language,
// the docs-check mark that stands before it, the line of its opening
// fence (1-based) and its lines, the fence's indent removed.
type fencedBlock struct {
	file, lang, mark string
	line             int
	lines            []string
}

// fencedBlocks reads the fenced blocks of one markdown file, each with
// the <!-- docs-check: MODE --> mark before it (blank lines between are
// allowed); a skip must give its reason.
func fencedBlocks(t *testing.T, file string) []fencedBlock {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	name := strings.TrimPrefix(file, "../../")
	var blocks []fencedBlock
	mark := ""
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if m := docsCheckMark.FindStringSubmatch(l); m != nil {
			mark = m[1]
			if mark == "skip" && strings.TrimSpace(m[2]) == "" {
				t.Errorf("%s:%d: docs-check: skip needs a reason", name, i+1)
			}
			continue
		}
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, "```") {
			mark = ""
			continue
		}
		b := fencedBlock{file: name, lang: strings.TrimPrefix(l, "```"), mark: mark, line: i + 1}
		mark = ""
		indent := strings.Repeat(" ", len(lines[i])-len(strings.TrimLeft(lines[i], " ")))
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			b.lines = append(b.lines, strings.TrimPrefix(lines[i], indent))
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// curlCommands reads the curl commands of the shell blocks of one
// markdown file, each with the "# " lines after it: the answers it must
// give.
func curlCommands(t *testing.T, file string) []curlCmd {
	t.Helper()
	var cmds []curlCmd
	for _, b := range fencedBlocks(t, file) {
		if b.lang != "sh" && b.lang != "bash" && b.lang != "console" {
			continue
		}
		lines := b.lines
		for i := 0; i < len(lines); i++ {
			start := i
			cmd := strings.TrimPrefix(strings.TrimSpace(lines[i]), "$ ")
			// A curl command, or a loop of one ("for ...; do curl ...").
			if !strings.HasPrefix(cmd, "curl ") && !(strings.HasPrefix(cmd, "for ") && strings.Contains(cmd, "; do curl ")) {
				continue
			}
			for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
			}
			c := curlCmd{file: b.file, mode: b.mark, line: b.line + 1 + start, cmd: cmd}
			for i+1 < len(lines) {
				next := lines[i+1]
				switch {
				case len(c.expected) > 0 && strings.HasPrefix(next, "#   "):
					c.expected[len(c.expected)-1] += strings.TrimSpace(strings.TrimPrefix(next, "#"))
				case strings.HasPrefix(next, "# "):
					c.expected = append(c.expected, strings.TrimPrefix(next, "# "))
				default:
					goto done
				}
				i++
			}
		done:
			cmds = append(cmds, c)
		}
	}
	return cmds
}

var (
	// variable: a timestamp, a decimal, or an integer of 4+ digits.
	variable = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z|[0-9]+\.[0-9]+|[0-9]{4,}`)
	afterN   = regexp.MustCompile(`after ([0-9.]+) s`)
)

// answerPattern turns a documented answer into a regexp: "..." matches
// anything, a variable value (timestamp, decimal, 4+ digits) any value
// of its kind.
func answerPattern(expected string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i, part := range strings.Split(expected, "...") {
		if i > 0 {
			b.WriteString(`.*?`)
		}
		last := 0
		for _, loc := range variable.FindAllStringIndex(part, -1) {
			b.WriteString(regexp.QuoteMeta(part[last:loc[0]]))
			switch v := part[loc[0]:loc[1]]; {
			case strings.HasSuffix(v, "Z"):
				b.WriteString(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?Z`)
			case strings.Contains(v, "."):
				b.WriteString(`[0-9]+(?:\.[0-9]+)?`)
			default:
				b.WriteString(`[0-9]+`)
			}
			last = loc[1]
		}
		b.WriteString(regexp.QuoteMeta(part[last:]))
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func docsGateway(t *testing.T, mode string) (port, key string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.AbuseLog = io.Discard
	cfg.EmbeddedRedisTestClock = mode == "test-clock"
	if mode == "keys" {
		key = "docs-check-client-key-0001"
		cfg.APIKeys = "checkout:client:shop:" + auth.HashKey(key)
	}
	s := gatewaytest.Start(t, cfg, nil)
	_, port, err := net.SplitHostPort(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return port, key
}

func TestDocsCurlExamplesAnswerWhatTheySay(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	curl := tooltest.Look(t, "Debian's curl package", "curl")
	_ = curl
	total := 0
	for _, file := range docFiles(t) {
		cmds := curlCommands(t, file)
		if len(cmds) == 0 {
			continue
		}
		for _, c := range cmds {
			if c.mode != "skip" {
				total++
			}
		}
		// Each file's examples run against gateways of their own, so
		// the files run at once; a file's examples run in order.
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			gateways := map[string][2]string{}
			for _, c := range cmds {
				if c.mode == "skip" {
					continue
				}
				where := c.file + ":" + strconv.Itoa(c.line)
				if len(c.expected) == 0 {
					t.Errorf("%s: %s\nhas no documented answer (a \"# {...}\" or \"# 204\" line under it), or mark its block <!-- docs-check: skip (why) -->", where, c.cmd)
					continue
				}
				if strings.Contains(c.cmd, "localhost:8080") || strings.Contains(c.cmd, "127.0.0.1:8080") {
					t.Errorf("%s: %s\nuses port 8080; write localhost:$PORT so the whole example follows one PORT", where, c.cmd)
					continue
				}
				gw, ok := gateways[c.mode]
				if !ok {
					port, key := docsGateway(t, c.mode)
					gw = [2]string{port, key}
					gateways[c.mode] = gw
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cmd := exec.CommandContext(ctx, bash, "-c", c.cmd)
				cmd.Env = append(os.Environ(), "PORT="+gw[0], "KEY="+gw[1])
				start := time.Now()
				out, err := cmd.Output()
				elapsed := time.Since(start)
				cancel()
				if err != nil {
					t.Errorf("%s: %s\nfailed after %v: %v", where, c.cmd, elapsed, err)
					continue
				}
				got := strings.TrimSpace(string(out))
				want := strings.Join(c.expected, "\n")
				if !answerPattern(want).MatchString(got) {
					t.Errorf("%s: %s\ngot  %s\nwant %s", where, c.cmd, got, want)
					continue
				}
				if m := afterN.FindStringSubmatch(want); m != nil {
					doc, _ := strconv.ParseFloat(m[1], 64)
					if d := elapsed.Seconds() - doc; d < -1 || d > 1 {
						t.Errorf("%s: %s\nanswered after %.2f s, the doc says %s", where, c.cmd, elapsed.Seconds(), m[0])
					}
				}
			}
		})
	}
	if total < 10 {
		t.Errorf("ran %d curl commands from the docs, want every one of README.md's at least", total)
	}
}

func TestAnswerPatternReadsTheDocsConventions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		want, got string
		match     bool
	}{
		{`{"acquired":true,"token":1796033336139242}`, `{"acquired":true,"token":1796033336139999}`, true},
		{`{"lock":{"owner":"node-a",...}}`, `{"lock":{"owner":"node-a","token":5,"x":"y"}}`, true},
		{`{"lock":{"owner":"node-a",...}}`, `{"lock":{"owner":"node-b","token":5}}`, false},
		{`{"at":"2026-11-30T10:08:56.139Z","retry_after_ms":29977}`, `{"at":"2027-01-02T03:04:05.6Z","retry_after_ms":812}`, true},
		{`204`, `204`, true},
		{`204`, `404`, false},
		{`{"status":403,...}`, `{"status":404,"x":1}`, false},
		{`{"attempts":1,...}`, `{"attempts":2,"x":1}`, false},
		{"{\"x\":1}\nafter 3.0 s", "{\"x\":1}\nafter 2.95 s", true},
		{`{"acquired":true}`, `{"acquired":false}`, false},
	} {
		if got := answerPattern(tc.want).MatchString(tc.got); got != tc.match {
			t.Errorf("answerPattern(%q) on %q: got %v, want %v", tc.want, tc.got, got, tc.match)
		}
	}
}
