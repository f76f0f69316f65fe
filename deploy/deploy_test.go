// Package deploy holds what operators deploy beside the gateway: the
// Grafana dashboard (grafana/) and the Prometheus alerting rules with
// their unit tests (prometheus/). Its tests check them against promtool,
// the gateway's real /metrics, and a real Prometheus
// (docs/observability.md).
package deploy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/client"
	"github.com/leasegate/leasegate/internal/gatewaytest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/internal/tooltest"
	"github.com/leasegate/leasegate/internal/webhooktest"
	"github.com/leasegate/leasegate/server"
	"github.com/leasegate/leasegate/webhook"
)

const (
	dashboardFile = "grafana/leasegate.json"
	rulesFile     = "prometheus/leasegate.rules.yml"
	rulesTestFile = "prometheus/leasegate.rules.test.yml"
	baselineTests = "prometheus/leasegate.baseline.test.yml"

	clientKey     = "deploy-test-client-key-0001"
	opsKey        = "deploy-test-ops-key-00000001"
	webhookSecret = "deploy-test-webhook-secret-0001"
	testClass     = "report:"
)

// tool is the path of a program of a Debian package (.ci/packages): a
// test needs it in CI, which installs the package, and skips without it
// elsewhere.
func tool(t *testing.T, name string) string {
	t.Helper()
	pkg := map[string]string{"promtool": "prometheus", "prometheus": "prometheus", "chromium": "chromium",
		"haproxy": "haproxy", "nginx": "nginx"}[name]
	return tooltest.Look(t, "Debian's "+pkg+" package", name)
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	promtool := tool(t, "promtool")
	run(t, "prometheus", promtool, "check", "rules", filepath.Base(rulesFile))
	run(t, "prometheus", promtool, "test", "rules", filepath.Base(rulesTestFile), filepath.Base(baselineTests))
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Type    string `json:"type"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// query is one PromQL expression of the dashboard, with where it is.
type query struct{ where, expr string }

func readDashboard(t *testing.T) []query {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []query
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		// label_values(<selector>, label): the selector is PromQL.
		m := regexp.MustCompile(`^label_values\((.+), *\w+\)$`).FindStringSubmatch(s)
		if m == nil {
			t.Errorf("variable %s: got query %q, want label_values(<selector>, <label>)", v.Name, s)
			continue
		}
		qs = append(qs, query{"variable " + v.Name, m[1]})
	}
	for _, want := range []string{"job", "instance", "class"} {
		if !vars[want] {
			t.Errorf("template variables: got %v, want one named %s", vars, want)
		}
	}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			qs = append(qs, query{fmt.Sprintf("panel %q query %d", p.Title, i+1), tg.Expr})
		}
	}
	return qs
}

// concrete is expr with the dashboard's variables given values.
func concrete(expr, job, instance, class, rateInterval string) string {
	return strings.NewReplacer(
		"$__rate_interval", rateInterval,
		"$job", job, "$instance", instance, "$class", class,
	).Replace(expr)
}

// metricNames are the leasegate_* names an expression reads.
var metricName = regexp.MustCompile(`\bleasegate_[a-z0-9_]+\b`)

// exportedFamilies reads the gateway's /metrics: family name → type.
func exportedFamilies(t *testing.T, url string) map[string]string {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	fams := map[string]string{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			fams[f[2]] = f[3]
		}
	}
	return fams
}

// exported says whether name is a series name of the families: the
// family itself, or a histogram's _bucket, _count or _sum.
func exported(fams map[string]string, name string) bool {
	if _, ok := fams[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && fams[base] == "histogram" {
			return true
		}
	}
	return false
}

// loaded is a gateway on a real Redis with API keys, a lock class and a
// webhook receiver, and a load that makes every labelled series the
// dashboard and the rules read exist.
type loaded struct {
	redis *redistest.Server
	url   string
	c     *client.Client
	ops   *client.Client
	bad   *client.Client
}

func startLoaded(t *testing.T) *loaded {
	t.Helper()
	rs := redistest.Start(t)
	rcv := webhooktest.New(t, webhookSecret, webhooktest.OK)
	cfg := server.DefaultConfig()
	cfg.RedisURL = rs.URL() + "?max_retries=-1"
	cfg.AbuseLog = io.Discard
	cfg.KeyPrefix = "deploytest:"
	cfg.LockClasses = []string{testClass}
	cfg.MetricsAuth = server.MetricsAuthNone
	// A sweep every second: leasegate_locks_held is back soon after a fault.
	cfg.IndexSweepInterval = time.Second
	cfg.APIKeys = "app:client:shop:" + auth.HashKey(clientKey) + ",oncall:ops:shop:" + auth.HashKey(opsKey)
	cfg.Webhooks = webhook.Config{URLs: []string{rcv.URL}, Secret: webhookSecret,
		BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Timeout: time.Second, ClaimAfter: 200 * time.Millisecond, Poll: 10 * time.Millisecond}
	s := gatewaytest.Start(t, cfg, nil)
	gatewaytest.Maintain(t, s) // the sweeps that count held locks and expiries
	url := gatewaytest.URL(s)
	once := client.WithRetryPolicy(client.RetryPolicy{Attempts: 1})
	return &loaded{redis: rs, url: url,
		c:   client.New(url, client.WithAPIKey(clientKey), once),
		ops: client.New(url, client.WithAPIKey(opsKey), once),
		bad: client.New(url, client.WithAPIKey("deploy-test-not-a-key-00001"), once),
	}
}

// round is one round of the load, i its number: granted, contended and
// waited acquires and releases of the lock class and of another, a
// forced release (a webhook event), a one-second lease left to expire, a
// semaphore permit, a refused key, a flagged user and a ban. It returns
// the first unexpected error.
func (l *loaded) round(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var errs []error
	for _, r := range []string{testClass + "daily", "other"} {
		lease, err := l.c.Acquire(ctx, r, time.Minute, client.WithOwner("a"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := l.c.Acquire(ctx, r, time.Minute, client.WithOwner("b")); !errors.Is(err, client.ErrNotAcquired) {
			errs = append(errs, fmt.Errorf("second acquire: got %v, want contended", err))
		}
		errs = append(errs, l.c.Release(ctx, lease))
	}
	if _, err := l.ops.Acquire(ctx, testClass+"stuck", time.Minute, client.WithOwner("w")); err != nil {
		errs = append(errs, err)
	} else if _, err := l.ops.ForceRelease(ctx, testClass+"stuck", "load"); err != nil {
		errs = append(errs, err)
	}
	// A job lease left to expire: the held locks rise and fall with
	// the rounds' pace instead of being always 0 at a sweep.
	if _, err := l.c.Acquire(ctx, fmt.Sprintf("job-%d", i), time.Second, client.WithOwner("cron")); err != nil {
		errs = append(errs, err)
	}
	if _, err := l.c.AcquirePermit(ctx, fmt.Sprintf("pool-%d", i), 3, time.Second); err != nil {
		errs = append(errs, err)
	}
	if _, err := l.bad.Acquire(ctx, "x", time.Minute); err == nil {
		errs = append(errs, errors.New("an unknown key was let in"))
	}
	user := fmt.Sprintf("u-%d", i)
	for range 6 {
		_, _ = l.c.UserLock(ctx, "checkin", user, 0)
	}
	if _, err := l.ops.BanUser(ctx, "b-"+user, time.Minute, "load"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// parseWithPromtool parses every query with promtool, as recording
// rules of a scratch rules file: promtool check rules parses each
// expression with Prometheus's own parser.
func parseWithPromtool(t *testing.T, qs []query) {
	t.Helper()
	promtool := tool(t, "promtool")
	type rule struct {
		Record string `yaml:"record"`
		Expr   string `yaml:"expr"`
	}
	var rules []rule
	for i, q := range qs {
		rules = append(rules, rule{Record: fmt.Sprintf("dashboard:query_%d", i), Expr: concrete(q.expr, ".*", ".*", ".*", "1m")})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yml"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, dir, promtool, "check", "rules", "dashboard.yml")
}

// ruleExprs are the alert expressions of the rules file.
func ruleExprs(t *testing.T) []query {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var qs []query
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			qs = append(qs, query{"alert " + r.Alert, r.Expr})
		}
	}
	return qs
}

// TestDashboardShowsWhatOperatorsAskFor: the dashboard reads a metric
// for each figure issue 24 lists (docs/observability.md, "The
// dashboard"), so that a panel dropped by mistake is noticed.
func TestDashboardShowsWhatOperatorsAskFor(t *testing.T) {
	t.Parallel()
	read := map[string]bool{}
	for _, q := range readDashboard(t) {
		for _, name := range metricName.FindAllString(q.expr, -1) {
			read[name] = true
		}
	}
	for figure, name := range map[string]string{
		"throughput by route":      "leasegate_http_request_duration_seconds_count",
		"errors by problem type":   "leasegate_http_problems_total",
		"acquire latency":          "leasegate_http_request_duration_seconds_bucket",
		"contention by lock class": "leasegate_lock_contended_acquires_total",
		"wait time by lock class":  "leasegate_lock_wait_seconds_bucket",
		"hold time":                "leasegate_lock_hold_seconds_bucket",
		"held locks":               "leasegate_locks_held",
		"waiters":                  "leasegate_lock_waiters",
		"the waiters' cap":         "leasegate_max_waiters",
		"Redis health":             "leasegate_redis_up",
		"Redis round trip":         "leasegate_redis_duration_seconds_bucket",
		"abuse flags":              "leasegate_abuse_flags_total",
		"bans":                     "leasegate_abuse_bans_total",
		"webhook backlog":          "leasegate_webhook_pending",
		"webhook dead letters":     "leasegate_webhook_dead_letters",
		"auth refusals":            "leasegate_auth_refusals_total",
	} {
		if !read[name] {
			t.Errorf("%s: no panel reads %s", figure, name)
		}
	}
}

func TestDashboardAndRulesNameOnlyExportedMetrics(t *testing.T) {
	t.Parallel()
	qs := readDashboard(t)
	parseWithPromtool(t, qs)
	l := startLoaded(t)
	for i := range 2 {
		if err := l.round(context.Background(), i); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	// Redis down and back: the state changes and errors exist.
	l.redis.Kill()
	_, _ = l.c.Acquire(context.Background(), "down", time.Minute)
	l.redis.Restart()
	redistest.Eventually(t, 10*time.Second, "the gateway to see Redis back", func() bool {
		return l.round(context.Background(), 9) == nil
	})
	// The held locks are left out while a sweep fails; the next one after
	// Redis is back counts them again.
	var fams map[string]string
	redistest.Eventually(t, 10*time.Second, "a sweep to count the held locks", func() bool {
		fams = exportedFamilies(t, l.url)
		return exported(fams, "leasegate_locks_held")
	})
	used := map[string]bool{}
	for _, q := range append(qs, ruleExprs(t)...) {
		for _, name := range metricName.FindAllString(q.expr, -1) {
			used[name] = true
			if !exported(fams, name) {
				t.Errorf("%s reads %s, which the gateway's /metrics does not export", q.where, name)
			}
		}
	}
	if len(used) < 15 {
		t.Errorf("got %d leasegate metrics read by the dashboard and rules, want the panels the issue lists (15 or more)", len(used))
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("metrics read: %s", strings.Join(names, " "))
}

// TestAFreshGatewayExportsWhatTheDashboardAndRulesRead: from the first
// scrape, before any lock, flag, ban, refused key or webhook, every
// series the dashboard and the rules read exists (the known label values
// at 0, as Prometheus's instrumentation guide asks), so no panel says "No
// data" and rate() has a start. Only leasegate_locks_held waits for the
// first sweep of the lock index, which Maintain runs at once.
func TestAFreshGatewayExportsWhatTheDashboardAndRulesRead(t *testing.T) {
	t.Parallel()
	l := startLoaded(t)
	var fams map[string]string
	redistest.Eventually(t, 10*time.Second, "the first sweep to count the held locks", func() bool {
		fams = exportedFamilies(t, l.url)
		return exported(fams, "leasegate_locks_held")
	})
	for _, q := range append(readDashboard(t), ruleExprs(t)...) {
		for _, name := range metricName.FindAllString(q.expr, -1) {
			if !exported(fams, name) {
				t.Errorf("%s reads %s, which a fresh gateway's /metrics does not export yet", q.where, name)
			}
		}
	}
}
