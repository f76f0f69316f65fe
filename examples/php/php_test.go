// Package php_test runs the PHP client's test script (tests/run.php)
// against a real gateway started in-process, with Debian's php-cli.
package php_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/logbuf"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/server"
)

// phpBinary returns the php CLI, skipping the test when it is missing
// (failing it under CI=true, where .ci/run installs php-cli).
func phpBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("php")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("php not found on PATH (CI=true: this is a failure, .ci/run installs php-cli): %v", err)
		}
		t.Skipf("php not installed (apt-get install php-cli): %v", err)
	}
	return bin
}

// startGateway runs a gateway on a free loopback port until the test ends
// and returns its base URL. redisURL "" uses the embedded Redis.
func startGateway(t *testing.T, name, redisURL string) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = redisURL
	logs := &logbuf.Buffer{}
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
	return gatewaytest.URL(gatewaytest.Start(t, cfg, log))
}

// runPHP runs tests/run.php with args and env, returning its combined
// output and error (an *exec.ExitError on a non-zero exit).
func runPHP(t *testing.T, php string, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, php, append([]string{"tests/run.php"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return out.String(), err
}

// TestPHPClient runs every group of tests/run.php as a subtest, once per
// PHP transport available (streams always, curl when the extension is
// loaded), so a failure names the part of the contract that broke.
func TestPHPClient(t *testing.T) {
	php := phpBinary(t)
	url := startGateway(t, "test", "")
	env := []string{
		"LEASEGATE_URL=" + url,
		// A gateway whose Redis is not there: every lock call is a 503
		// (without go-redis's retries, so each one fails fast).
		"LEASEGATE_DOWN_URL=" + startGateway(t, "Redis-down", "redis://"+redistest.FreeAddr(t)+"?max_retries=-1"),
		// No gateway at all: a transport error.
		"LEASEGATE_DEAD_URL=http://" + redistest.FreeAddr(t),
		"LEASEGATE_API_KEY=",
	}

	list, err := runPHP(t, php, env, "--list")
	if err != nil {
		t.Fatalf("php tests/run.php --list: %v\n%s", err, list)
	}
	var groups []string
	sc := bufio.NewScanner(strings.NewReader(list))
	for sc.Scan() {
		if g := strings.TrimSpace(sc.Text()); g != "" {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		t.Fatalf("php tests/run.php --list printed no groups:\n%s", list)
	}
	transports, err := runPHP(t, php, env, "--transports")
	if err != nil {
		t.Fatalf("php tests/run.php --transports: %v\n%s", err, transports)
	}

	for _, transport := range strings.Fields(transports) {
		for _, group := range groups {
			t.Run(transport+"/"+group, func(t *testing.T) {
				out, err := runPHP(t, php, env, "--transport="+transport, "--group="+group)
				var exit *exec.ExitError
				switch {
				case errors.As(err, &exit):
					t.Fatalf("php tests/run.php --transport=%s --group=%s exited %d:\n%s", transport, group, exit.ExitCode(), out)
				case err != nil:
					t.Fatalf("php tests/run.php: %v\n%s", err, out)
				}
				t.Logf("%s", out)
			})
		}
	}

	// Every run clears the users it flagged or banned.
	page, err := client.New(url).ListFlagged(context.Background(), client.ListFlaggedOptions{Limit: 500})
	if err != nil {
		t.Fatalf("list flagged users after the PHP runs: %v", err)
	}
	for _, f := range page.Items {
		t.Errorf("the PHP runs left user %q flagged on lock %q (times %d, banned until %v)", f.UserID, f.Lock, f.TimesFlagged, f.BannedUntil)
	}
}

// TestPHPRunnerRefusesUnknownArguments: getopt() skips what it does not
// know, so "--gruop=bans" used to run every group; now it is exit 2.
func TestPHPRunnerRefusesUnknownArguments(t *testing.T) {
	php := phpBinary(t)
	env := []string{"LEASEGATE_URL=http://" + redistest.FreeAddr(t)}
	for _, args := range [][]string{
		{"--gruop=bans"},
		{"--group=offline", "--verbose"},
		{"offline"},
		{"--group"},
		{"--group="},
		{"-x"},
	} {
		out, err := runPHP(t, php, env, args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("php tests/run.php %q: got %v, want exit 2\n%s", args, err, out)
			continue
		}
		if !strings.Contains(out, "usage: php tests/run.php") || strings.Contains(out, "== ") {
			t.Errorf("php tests/run.php %q: want the usage and no group run, got:\n%s", args, out)
		}
	}
	for _, args := range [][]string{{"--group", "offline"}, {"--group=offline", "--transport=stream"}, {"--help"}} {
		if out, err := runPHP(t, php, env, args...); err != nil {
			t.Errorf("php tests/run.php %q: got %v, want success\n%s", args, err, out)
		}
	}
}
