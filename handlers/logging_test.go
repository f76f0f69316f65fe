package handlers_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// The request log is one JSON line per request whatever the client sends:
// request ids, paths and owners with newlines, quotes, and ANSI escapes.
func TestRequestLogStaysOneJSONLinePerRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	evil := "id\n{\"level\":\"error\",\"msg\":\"forged\"}\r\n\x1b[31mred\x1b[0m\"'\\"
	requests := []struct{ method, target, body, id string }{
		{http.MethodGet, "/healthz", "", evil},
		{http.MethodPost, "/locks/a%0A%7B%22msg%22%3A%22forged%22%7D", `{"owner":"svc-a","ttl_seconds":30}`, evil},
		{http.MethodPost, "/locks/ok", `{"owner":"svc\n\"a\u001b[31m","ttl_seconds":30}`, "plain-id"},
		{http.MethodGet, "/no/such/\"route\"%0A%1B%5B31m", "", "\x1b]0;title\x07"},
		{http.MethodPut, "/locks/%22quoted%22", "", "a\"b"},
	}
	for _, r := range requests {
		req := httptest.NewRequest(r.method, r.target, strings.NewReader(r.body))
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header["X-Request-Id"] = []string{r.id}
		h.E.ServeHTTP(httptest.NewRecorder(), req)
	}

	logs := h.Log.String()
	lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
	if len(lines) != len(requests) {
		t.Fatalf("got %d log lines, want %d (one per request):\n%s", len(lines), len(requests), logs)
	}
	safeID := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d is not JSON (%v): %q", i, err, line)
		}
		if strings.ContainsAny(line, "\x1b\r\x07") {
			t.Errorf("line %d holds a raw control byte: %q", i, line)
		}
		if rec["msg"] != "request" {
			t.Errorf("line %d: got msg %v, want request", i, rec["msg"])
		}
		id, _ := rec["request_id"].(string)
		if !safeID.MatchString(id) {
			t.Errorf("line %d: got request_id %q, want a plain id", i, id)
		}
		for _, k := range []string{"method", "route", "status", "latency_ms", "remote_ip"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("line %d: got no %q field: %s", i, k, line)
			}
		}
	}
	if strings.Contains(logs, "forged") {
		t.Errorf("user-supplied text reached the log: %s", logs)
	}
	var third map[string]any
	_ = json.Unmarshal([]byte(lines[2]), &third)
	if third["request_id"] != "plain-id" || third["route"] != "/locks/:resource" || third["status"] != float64(422) {
		t.Errorf("got %v, want request_id plain-id, route /locks/:resource, status 422 (owner with control characters)", third)
	}
	var fourth map[string]any
	_ = json.Unmarshal([]byte(lines[3]), &fourth)
	if fourth["route"] != "unmatched" || fourth["status"] != float64(404) {
		t.Errorf("got %v, want route unmatched and status 404 for an unknown path", fourth)
	}
}
