package main

import (
	"encoding/json"
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/bench"
	"github.com/leasegate/leasegate/internal/gatewaytest"
)

// The load generator's logic (request bound, duration, fencing check,
// histogram) is tested in package bench; these tests cover the command:
// flags and environment, output, exit status.

// runLoadJSON runs `leasegate load --json args...` and decodes the report.
func runLoadJSON(t *testing.T, env map[string]string, args ...string) (cliResult, bench.LoadReport) {
	t.Helper()
	r := runCLI(t, env, append([]string{"load", "--json"}, args...)...)
	var rep bench.LoadReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("exit %d, stdout %q, stderr %q: not a JSON report: %v", r.code, r.stdout, r.stderr, err)
	}
	return r, rep
}

// parseLoad parses load's flags as cmdLoad does, without running.
func parseLoad(t *testing.T, args []string, kv map[string]string) (bench.LoadConfig, bool) {
	t.Helper()
	cfg := bench.DefaultLoadConfig()
	var jsonOut bool
	if err := parseFlags(loadFlagSet(&cfg, &jsonOut), args, env(kv), io.Discard); err != nil {
		t.Fatalf("parse %q with %v: %v", args, kv, err)
	}
	return cfg, jsonOut
}

func TestLoadFlagsAndEnvironmentFillTheConfig(t *testing.T) {
	t.Parallel()
	t.Run("defaults when nothing is set", func(t *testing.T) {
		cfg, jsonOut := parseLoad(t, nil, nil)
		if cfg != bench.DefaultLoadConfig() || jsonOut {
			t.Errorf("got %+v json %v, want the defaults %+v json false", cfg, jsonOut, bench.DefaultLoadConfig())
		}
		if cfg.Scenario != bench.AcquireRelease {
			t.Errorf("got scenario %q, want acquire-release", cfg.Scenario)
		}
	})
	t.Run("the environment and flags set every field, flags winning", func(t *testing.T) {
		cfg, jsonOut := parseLoad(t, []string{"--concurrency", "2", "--ttl", "3s"}, map[string]string{
			"LEASEGATE_URL":          "http://127.0.0.1:9",
			"LEASEGATE_API_KEY":      "k",
			"LEASEGATE_DURATION":     "300ms",
			"LEASEGATE_REQUESTS":     "40",
			"LEASEGATE_CONCURRENCY":  "5",
			"LEASEGATE_RESOURCES":    "3",
			"LEASEGATE_SCENARIO":     "contended",
			"LEASEGATE_TTL":          "2s",
			"LEASEGATE_JSON":         "true",
			"LEASEGATE_ALLOW_REMOTE": "true",
			"LEASEGATE_WAIT_MS":      "250",
			"LEASEGATE_HOLD":         "2ms",
		})
		want := bench.LoadConfig{
			URL: "http://127.0.0.1:9", APIKey: "k", Duration: 300 * time.Millisecond, Requests: 40,
			Concurrency: 2, Resources: 3, Scenario: bench.Contended, TTL: 3 * time.Second, AllowRemote: true,
			Wait: 250 * time.Millisecond, Hold: 2 * time.Millisecond,
		}
		if cfg != want || !jsonOut {
			t.Errorf("got %+v json %v, want %+v json true", cfg, jsonOut, want)
		}
	})
}

func TestLoadPrintsAReadableSummary(t *testing.T) {
	t.Parallel()
	gw := startGateway(t)
	r := runCLI(t, nil, "load", "--url", gw, "--requests", "20", "--scenario", "contended")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^requests +20 +\(successes 20, errors 0\)`).MatchString(r.stdout) {
		t.Errorf("got\n%s\nwant a line with 20 requests, all successes", r.stdout)
	}
	for _, want := range []string{"stopped by requests", "throughput", "acquire", "p99 ms", "fencing check: 0 violations"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("got\n%s\nwant it to contain %q", r.stdout, want)
		}
	}
}

func TestLoadExitsOneOnFencingViolations(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"1", "4"} {
		t.Run("with "+c+" workers", func(t *testing.T) {
			gw := gatewaytest.StartTokenReuser(t)
			r, rep := runLoadJSON(t, map[string]string{"LEASEGATE_SCENARIO": "contended"}, "--url", gw, "--concurrency", c, "--requests", "20")
			if r.code != 1 {
				t.Errorf("got exit %d, want 1", r.code)
			}
			if !strings.Contains(r.stderr, "fencing violations") {
				t.Errorf("got stderr %q, want it to report fencing violations", r.stderr)
			}
			if rep.Fencing == nil || rep.Fencing.Violations == 0 || len(rep.Fencing.Examples) == 0 {
				t.Errorf("got fencing %+v in the JSON report, want violations with examples", rep.Fencing)
			}
		})
	}
}

func TestLoadUsage(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"a non-loopback IP is refused":          {"--url", "http://192.0.2.10:8080"},
		"a host name is refused":                {"--url", "http://gateway.example.com"},
		"an unspecified address is refused":     {"--url", "http://0.0.0.0:8080"},
		"a non-HTTP URL is refused":             {"--url", "ftp://127.0.0.1/"},
		"a duration above 5m is refused":        {"--duration", "6m"},
		"a zero duration is refused":            {"--duration", "0s"},
		"a TTL in milliseconds is refused":      {"--ttl", "1500ms"},
		"an unknown scenario is refused":        {"--scenario", "chaos"},
		"zero workers are refused":              {"--concurrency", "0"},
		"negative requests are refused":         {"--requests", "-1"},
		"arguments after the flags are refused": {"extra"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, nil, append([]string{"load"}, args...)...)
			if r.code != 2 || r.stdout != "" {
				t.Errorf("got exit %d, stdout %q, want 2 and no summary (stderr %q)", r.code, r.stdout, r.stderr)
			}
		})
	}
	t.Run("the refusal of a remote gateway says why", func(t *testing.T) {
		r := runCLI(t, map[string]string{"LEASEGATE_URL": "http://10.1.2.3:8080"}, "load")
		if r.code != 2 || !strings.Contains(r.stderr, "not a loopback address") || !strings.Contains(r.stderr, "--allow-remote") {
			t.Errorf("got exit %d, stderr %q, want 2 naming loopback and --allow-remote", r.code, r.stderr)
		}
	})
}

// TestConfigurationDocListsEveryLoadFlag keeps the `leasegate load` table
// of docs/configuration.md equal to the flags: every flag has one row with
// its environment variable and default, and every row names a real flag.
func TestConfigurationDocListsEveryLoadFlag(t *testing.T) {
	t.Parallel()
	cfg := bench.DefaultLoadConfig()
	var jsonOut bool
	fs := loadFlagSet(&cfg, &jsonOut)
	rows := readFlagTable(t, configDoc, "## `leasegate load`")
	documented := map[string]flagRow{}
	for _, r := range rows {
		name, ok := strings.CutPrefix(r.flag, "--")
		if _, dup := documented[name]; !ok || dup || fs.Lookup(name) == nil || r.meaning == "" {
			t.Errorf("%s:%d: got row for %q, want each `--flag` of leasegate load once, with a meaning", configDoc, r.line, r.flag)
			continue
		}
		documented[name] = r
	}
	fs.VisitAll(func(fl *flag.Flag) {
		r, ok := documented[fl.Name]
		switch {
		case !ok:
			t.Errorf("--%s (%s) is not documented in %s", fl.Name, fl.Usage, configDoc)
		case r.env != envName(fl.Name):
			t.Errorf("%s:%d: --%s: got env %q, want %q", configDoc, r.line, fl.Name, r.env, envName(fl.Name))
		case !sameDefault(r.defValue, fl.DefValue):
			t.Errorf("%s:%d: --%s: got default %q, want %q", configDoc, r.line, fl.Name, r.defValue, fl.DefValue)
		}
	})
}
