package handlers_test

import (
	"net/http"
	"testing"

	"github.com/leasegate/leasegate/metrics"
)

// problemCounts reads leasegate_http_problems_total from m: "route type"
// → count.
func problemCounts(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "leasegate_http_problems_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			// Series exported at 0 from the start (metrics.New) count
			// nothing.
			if v := s.GetCounter().GetValue(); v != 0 {
				got[l["route"]+" "+l["type"]] += v
			}
		}
	}
	return got
}

// Every problem answer is counted once, under its route template and the
// slug of its type; a success, or a contended acquire (a 200), is not.
func TestProblemsAreCountedByRouteAndType(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.acquire(t, "held", "svc-a", 30)
	h.Do(t, http.MethodPost, "/locks/held", `{"owner":"svc-b","ttl_seconds":30}`).Want(t, http.StatusOK)
	h.Do(t, http.MethodGet, "/locks/held", "").Want(t, http.StatusOK)
	if got := problemCounts(t, h.Metrics); len(got) != 0 {
		t.Fatalf("after 2xx answers only: got %v, want no problem counted", got)
	}

	h.Do(t, http.MethodPost, "/locks/held", `{"owner":"svc-a","ttl_seconds":0}`).Problem(t, http.StatusUnprocessableEntity, "validation")
	h.Do(t, http.MethodPost, "/locks/held", `{"owner":`).Problem(t, http.StatusBadRequest, "malformed-request")
	h.Do(t, http.MethodPost, "/locks/held/renew", `{"owner":"svc-b","ttl_seconds":30}`).Problem(t, http.StatusForbidden, "forbidden")
	h.Do(t, http.MethodDelete, "/locks/held?owner=svc-b", "").Problem(t, http.StatusForbidden, "forbidden")
	h.Do(t, http.MethodGet, "/no/such/route", "").Problem(t, http.StatusNotFound, "not-found")
	// A HEAD's problem has no body, but it is answered: counted (a 405
	// is a malformed request, docs/api.md).
	h.Do(t, http.MethodHead, "/locks/held", "").Want(t, http.StatusMethodNotAllowed)
	h.Backend.Mini.SetError("ERR injected outage")
	h.Do(t, http.MethodGet, "/locks/held", "").Problem(t, http.StatusServiceUnavailable, "unavailable")
	h.Backend.Mini.SetError("")
	h.Do(t, http.MethodDelete, "/locks/held?owner=svc-a", "").Want(t, http.StatusNoContent)

	want := map[string]float64{
		"/locks/:resource validation":        1,
		"/locks/:resource malformed-request": 2,
		"/locks/:resource/renew forbidden":   1,
		"/locks/:resource forbidden":         1,
		"unmatched not-found":                1,
		"/locks/:resource unavailable":       1,
	}
	got := problemCounts(t, h.Metrics)
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: got %v, want %v", k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: got %v, want nothing counted", k, n)
		}
	}
}
