// Package php_test runs the PHP package's PHPUnit suites (phpunit.xml.dist)
// against real gateways started in-process: the client with each PHP
// transport, the Symfony Lock store and the Laravel lock provider with the
// default one. Debian's phpunit (9.6) is what CI runs.
package php_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/logtest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/tooltest"
	"github.com/leasegate/leasegate/server"
)

// tool returns the path of a command the PHP tests need (tooltest.Look:
// a skip that shows, or a failure under CI=true).
func tool(t *testing.T, name, pkg string) string {
	t.Helper()
	return tooltest.Look(t, "apt-get install "+pkg, name)
}

// startGateway runs a gateway on a free loopback port (on a Unix domain
// socket with unix) until the test ends and returns its base URL
// (http://127.0.0.1:port or unix:/path). redisURL "" uses the embedded
// Redis.
func startGateway(t *testing.T, name, redisURL string, unix bool) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = redisURL
	cfg.AbusePolicies.AttemptLogMaxEntries = 10000 // for the backtest test
	logs := &logtest.Buffer{}
	log := zap.New(zapcore.NewCore(
		zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()),
		zapcore.AddSync(logs),
		zap.WarnLevel,
	))
	// Registered first, so it runs last: after the gateway has shut down.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of the %s gateway:\n%s", name, logs.String())
		}
	})
	if unix {
		cfg.Addr = "unix:" + filepath.Join(t.TempDir(), "gw.sock")
	}
	return gatewaytest.URL(gatewaytest.Start(t, cfg, log))
}

// junit is the part of PHPUnit's --log-junit report the driver reads.
type junit struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Suites []junitSuite `xml:"testsuite"`
	Cases  []junitCase  `xml:"testcase"`
}

type junitCase struct {
	Class    string    `xml:"class,attr"`
	Name     string    `xml:"name,attr"`
	Failures []string  `xml:"failure"`
	Errors   []string  `xml:"error"`
	Warnings []string  `xml:"warning"`
	Skipped  *struct{} `xml:"skipped"`
}

func (s junitSuite) cases() []junitCase {
	out := append([]junitCase(nil), s.Cases...)
	for _, sub := range s.Suites {
		out = append(out, sub.cases()...)
	}
	return out
}

// runSuite runs one PHPUnit test suite with env and reports every PHPUnit
// test as a Go subtest, so a failure names the PHP test that broke.
func runSuite(t *testing.T, phpunit, suite string, env []string) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "junit.xml")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, phpunit, "--configuration", "phpunit.xml.dist", "--testsuite", suite, "--log-junit", report)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()

	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("phpunit --testsuite %s wrote no report (%v): %v\n%s", suite, runErr, err, out.String())
	}
	var r junit
	if err := xml.Unmarshal(raw, &r); err != nil {
		t.Fatalf("phpunit --testsuite %s: report: %v", suite, err)
	}
	var cases []junitCase
	for _, s := range r.Suites {
		cases = append(cases, s.cases()...)
	}
	if len(cases) == 0 {
		t.Fatalf("phpunit --testsuite %s ran no tests:\n%s", suite, out.String())
	}
	for _, c := range cases {
		class := c.Class[strings.LastIndex(c.Class, `\`)+1:]
		t.Run(class+"/"+c.Name, func(t *testing.T) {
			for _, f := range append(append(c.Failures, c.Errors...), c.Warnings...) {
				t.Error(f)
			}
			if c.Skipped != nil {
				// A skipped PHP test is a failure under CI=true: the
				// framework packages are installed there.
				if os.Getenv("CI") == "true" {
					t.Fatal("skipped under CI=true")
				}
				t.Skip("skipped by PHPUnit (see its output)")
			}
		})
	}
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		t.Errorf("phpunit --testsuite %s exited %d:\n%s", suite, exit.ExitCode(), out.String())
	case runErr != nil:
		t.Errorf("phpunit --testsuite %s: %v\n%s", suite, runErr, out.String())
	default:
		t.Logf("%s", out.String())
	}
}

// TestPHPUnit runs the client suite once per PHP transport (streams
// always, curl when the extension is loaded) and once more on streams
// over a Unix domain socket and the framework suites
// (Debian's php-symfony-lock and php-laravel-framework) and the PHPUnit
// fixture's (LeaseGate\Testing) with the default transport.
func TestPHPUnit(t *testing.T) {
	t.Parallel()
	tool(t, "php", "php-cli")
	phpunit := tool(t, "phpunit", "phpunit")
	// Every suite gets a gateway (and Redis) of its own, so the suites
	// run in parallel without meeting each other's locks.
	env := func(t *testing.T, url string) []string {
		return []string{
			"LEASEGATE_URL=" + url,
			// A gateway whose Redis is not there: every lock call is a 503
			// (without go-redis's retries, so each one fails fast).
			"LEASEGATE_DOWN_URL=" + startGateway(t, "Redis-down", "redis://"+redistest.DeadAddr(t)+"?max_retries=-1", false),
			// No gateway at all: a transport error.
			"LEASEGATE_DEAD_URL=http://" + redistest.DeadAddr(t),
			"LEASEGATE_API_KEY=",
		}
	}
	run := func(t *testing.T, suite string, unix bool, extra ...string) {
		t.Parallel()
		url := startGateway(t, "test", "", unix)
		runSuite(t, phpunit, suite, append(env(t, url), extra...))
		// Every run clears the users it flagged or banned.
		page, err := client.New(url).ListFlagged(context.Background(), client.ListFlaggedOptions{Limit: 500})
		if err != nil {
			t.Fatalf("list flagged users after the PHP run: %v", err)
		}
		for _, f := range page.Items {
			t.Errorf("the PHP run left user %q flagged on lock %q (times %d, banned until %v)", f.UserID, f.Lock, f.TimesFlagged, f.BannedUntil)
		}
	}

	transports := []string{"stream"}
	if out, err := exec.Command("php", "-r", "echo extension_loaded('curl') ? 'yes' : 'no';").Output(); err == nil && string(out) == "yes" {
		transports = append(transports, "curl")
	} else if os.Getenv("CI") == "true" {
		t.Errorf("ext-curl is not loaded (CI=true: .ci/run installs php-curl): %v %s", err, out)
	}
	for _, transport := range transports {
		t.Run("client/"+transport, func(t *testing.T) {
			run(t, "client", false, "LEASEGATE_TRANSPORT="+transport)
		})
	}
	// The suite once more with the gateway on a Unix domain socket
	// (LEASEGATE_URL=unix:/path), on streams; KeepAliveTest sends both
	// transports over a socket, and the fixture's own suite runs a
	// gateway on one with the default transport.
	t.Run("client/unix-stream", func(t *testing.T) {
		run(t, "client", true, "LEASEGATE_TRANSPORT=stream")
	})
	// The framework suites and the fixture's own run on gateways that
	// LeaseGate\Testing\TestGateway starts from the binary, as a PHP
	// app's tests would (no LEASEGATE_URL).
	bin := gatewaytest.Binary(t)
	for _, suite := range []string{"symfony", "laravel", "testing"} {
		t.Run(suite, func(t *testing.T) {
			t.Parallel()
			e := env(t, "")
			e[0] = "LEASEGATE_BIN=" + bin
			runSuite(t, phpunit, suite, e)
		})
	}
}

// TestPSR12 runs PHP_CodeSniffer's PSR-12 standard over the package's
// sources, as a PHP team's own CI would (.ci/packages installs
// php-codesniffer).
func TestPSR12(t *testing.T) {
	t.Parallel()
	phpcs := tool(t, "phpcs", "php-codesniffer")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, phpcs, "--standard=PSR12", "--report=emacs", "src").CombinedOutput()
	if err != nil {
		t.Errorf("phpcs --standard=PSR12 src: %v (phpcbf --standard=PSR12 src fixes some):\n%s", err, out)
	}
}

// TestStoreBenchmarkRuns runs bench/store_bench.php and
// bench/cycle_bench.php for a few cycles, so the scripts behind
// docs/benchmarks.md's PHP figures keep working.
func TestStoreBenchmarkRuns(t *testing.T) {
	t.Parallel()
	php := tool(t, "php", "php-cli")
	url := startGateway(t, "bench", "", false)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, php, "bench/store_bench.php", "--url="+url, "--cycles=5", "--rounds=1").CombinedOutput()
	if err != nil {
		t.Fatalf("php bench/store_bench.php: %v\n%s", err, out)
	}
	for _, want := range []string{"client ", "store ", "lock ", "ratio store/client "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("php bench/store_bench.php: no %q line in:\n%s", want, out)
		}
	}
	out, err = exec.CommandContext(ctx, php, "bench/cycle_bench.php", "--url="+url, "--cycles=3").CombinedOutput()
	if err != nil {
		t.Fatalf("php bench/cycle_bench.php: %v\n%s", err, out)
	}
	for _, want := range []string{"client tcp ", "symfony tcp "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("php bench/cycle_bench.php: no %q line in:\n%s", want, out)
		}
	}
}

// TestFixtureWithoutAGateway runs the PHPUnit fixture's suite without a
// usable gateway binary: a LEASEGATE_BIN that is set but wrong fails the
// run, naming it; with nothing configured the tests are skipped and
// STDERR says so (the summary shows only a count), and under CI=true
// they fail.
func TestFixtureWithoutAGateway(t *testing.T) {
	t.Parallel()
	php := tool(t, "php", "php-cli")
	phpunit := tool(t, "phpunit", "phpunit")
	run := func(t *testing.T, env ...string) (int, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, phpunit, "--configuration", "phpunit.xml.dist", "--testsuite", "testing")
		// The last of duplicate variables wins.
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0, string(out)
		case errors.As(err, &exit):
			return exit.ExitCode(), string(out)
		}
		t.Fatalf("phpunit: %v\n%s", err, out)
		return 0, ""
	}
	missing := filepath.Join(t.TempDir(), "no-such-leasegate")
	for _, c := range []struct{ name, bin, want string }{
		{"missing", missing, "LEASEGATE_BIN=" + missing + " is not an executable file"},
		{"not a gateway", "/bin/false", "/bin/false serve did not start"},
	} {
		t.Run("LEASEGATE_BIN "+c.name, func(t *testing.T) {
			t.Parallel()
			code, out := run(t, "LEASEGATE_BIN="+c.bin, "CI=")
			if code == 0 || !strings.Contains(out, c.want) {
				t.Errorf("phpunit with LEASEGATE_BIN=%s: exit %d, want a failure saying %q:\n%s", c.bin, code, c.want, out)
			}
		})
	}
	// Nothing configured: no LEASEGATE_BIN, and a PATH with php but no leasegate.
	dir := filepath.Dir(php)
	if _, err := os.Stat(filepath.Join(dir, "leasegate")); err == nil {
		t.Skipf("%s holds a leasegate binary: cannot run without one", dir)
	}
	nothing := []string{"LEASEGATE_BIN=", "PATH=" + dir}
	code, out := run(t, append(nothing, "CI=")...)
	if code != 0 || !strings.Contains(out, "GatewayTestCase tests are SKIPPED") || !strings.Contains(out, "Skipped:") {
		t.Errorf("phpunit with nothing configured: exit %d, want 0 with the skips said on stderr:\n%s", code, out)
	}
	if code, out := run(t, append(nothing, "CI=true")...); code == 0 {
		t.Errorf("phpunit with nothing configured, CI=true: exit 0, want a failure:\n%s", out)
	}
}
