package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/leasegate/leasegate/internal/redistest"
)

// testFor is the for: of every alert in the test copy of the rules.
const testFor = 3 * time.Second

// testRules writes a copy of the rules whose every for: is testFor, so
// that an alert fires within seconds.
func testRules(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r.(map[string]any)["for"] = testFor.String()
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startPrometheus runs Debian's prometheus on a free loopback port,
// scraping target every second with the test copy of the rules, and
// returns its base URL.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	bin := tool(t, "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: leasegate
    static_configs:
      - targets: [%q]
`, testRules(t, dir), target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := redistest.FreeAddr(t)
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	base := "http://" + addr
	redistest.Eventually(t, 30*time.Second, "prometheus to be ready", func() bool {
		res, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return base
}

// promQuery runs an instant query; it returns the number of series of
// the answer, or an error (a query Prometheus refuses, or no answer).
func promQuery(base, expr string) (int, error) {
	res, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return 0, err
	}
	if out.Status != "success" {
		return 0, fmt.Errorf("%s: %s", out.Status, out.Error)
	}
	return len(out.Data.Result), nil
}

// alertState is the state of alert name ("" when inactive).
func alertState(t *testing.T, base, name string) string {
	t.Helper()
	res, err := http.Get(base + "/api/v1/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	state := ""
	for _, a := range out.Data.Alerts {
		if a.Labels["alertname"] == name && (state == "" || a.State == "firing") {
			state = a.State
		}
	}
	return state
}

// The dashboard's queries and the Redis-down alert on a real Prometheus
// scraping a gateway under load: every query answers data, the alert
// fires within its for: (plus a scrape and an evaluation) after Redis is
// killed, and resolves once Redis is back.
func TestDashboardAndAlertsOnARealPrometheus(t *testing.T) {
	t.Parallel()
	l := startLoaded(t)
	prom := startPrometheus(t, strings.TrimPrefix(l.url, "http://"))

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			_ = l.round(ctx, i)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { stop(); wg.Wait() })

	// Some scrapes under load, so that rates have two samples or more.
	redistest.Eventually(t, 30*time.Second, "prometheus to scrape the gateway under load", func() bool {
		n, err := promQuery(prom, `count_over_time(leasegate_lock_acquires_total{job="leasegate",outcome="contended"}[1m]) >= 4`)
		return err == nil && n > 0
	})
	// The held locks, counted by the first index sweep.
	redistest.Eventually(t, 30*time.Second, "prometheus to scrape the held locks", func() bool {
		n, err := promQuery(prom, `leasegate_locks_held{job="leasegate"}`)
		return err == nil && n > 0
	})
	inst := strings.TrimPrefix(l.url, "http://")
	// Queries of events that only an outage makes (Redis state changes
	// and errors) are asked again after the fault below.
	afterFault := map[string]bool{}
	for _, q := range readDashboard(t) {
		expr := concrete(q.expr, "leasegate", inst, ".*", "30s")
		n, err := promQuery(prom, expr)
		switch {
		case err != nil:
			t.Errorf("%s: prometheus refused %s: %v", q.where, expr, err)
		case n == 0 && (strings.Contains(expr, "redis_state_changes_total") || strings.Contains(expr, "redis_errors_total")):
			afterFault[expr] = true
		case n == 0:
			t.Errorf("%s: no data for %s", q.where, expr)
		}
	}
	for _, q := range ruleExprs(t) {
		if _, err := promQuery(prom, q.expr); err != nil {
			t.Errorf("%s: prometheus refused its expression: %v", q.where, err)
		}
	}
	if got := alertState(t, prom, "LeasegateRedisDown"); got != "" {
		t.Fatalf("LeasegateRedisDown before the fault: got %q, want inactive", got)
	}
	if path := os.Getenv("LEASEGATE_DASHBOARD_SCREENSHOT"); path != "" {
		screenshot(t, prom, inst, path)
	}

	l.redis.Kill()
	killed := time.Now()
	// for: plus a scrape, an evaluation and the guard's own detection.
	within := testFor + 10*time.Second
	redistest.Eventually(t, within, "LeasegateRedisDown to fire", func() bool {
		return alertState(t, prom, "LeasegateRedisDown") == "firing"
	})
	t.Logf("LeasegateRedisDown fired %v after Redis was killed (for: %v)", time.Since(killed).Round(100*time.Millisecond), testFor)
	for expr := range afterFault {
		redistest.Eventually(t, 10*time.Second, "data for "+expr, func() bool {
			n, err := promQuery(prom, expr)
			return err == nil && n > 0
		})
	}

	l.redis.Restart()
	back := time.Now()
	redistest.Eventually(t, 20*time.Second, "LeasegateRedisDown to resolve", func() bool {
		return alertState(t, prom, "LeasegateRedisDown") == ""
	})
	t.Logf("LeasegateRedisDown resolved %v after Redis came back", time.Since(back).Round(100*time.Millisecond))
}

// screenshot saves Chromium's pictures of Prometheus's graph page, one
// query of the dashboard each, stacked into one PNG at path
// (docs/observability.md: not a Grafana screenshot; Grafana is not
// packaged in Debian). It first lets the load run for a minute of data.
func screenshot(t *testing.T, prom, inst, path string) {
	t.Helper()
	chromium := tool(t, "chromium")
	time.Sleep(45 * time.Second) // a minute of graph for the picture, not a synchronisation
	panels := []string{
		"Requests by route", "Acquire latency (POST /locks/{resource})",
		"Errors by problem type", "Contended acquires by class",
		"Held locks", "Redis round trip by operation (p99)",
		"Hold time by class", "Auth refusals",
	}
	byTitle := map[string]string{}
	for _, qu := range readDashboard(t) {
		title, _, _ := strings.Cut(strings.TrimPrefix(qu.where, "panel \""), "\" query")
		if _, ok := byTitle[title]; !ok {
			byTitle[title] = qu.expr
		}
	}
	dir := t.TempDir()
	var shots []image.Image
	for i, title := range panels {
		q := url.Values{}
		q.Set("g0.expr", concrete(byTitle[title], "leasegate", inst, ".*", "10s"))
		q.Set("g0.tab", "0")
		q.Set("g0.range_input", "1m")
		file := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		out, err := exec.Command(chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--window-size=1200,900", "--virtual-time-budget=10000", "--screenshot="+file,
			prom+"/graph?"+q.Encode()).CombinedOutput()
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, out)
		}
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		shots = append(shots, img)
	}
	w, h := 0, 0
	for _, img := range shots {
		w = max(w, img.Bounds().Dx())
		h += img.Bounds().Dy()
	}
	all := image.NewRGBA(image.Rect(0, 0, w, h))
	y := 0
	for _, img := range shots {
		draw.Draw(all, image.Rect(0, y, w, y+img.Bounds().Dy()), img, img.Bounds().Min, draw.Src)
		y += img.Bounds().Dy()
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, all); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %d queries: %s", len(shots), path)
}
