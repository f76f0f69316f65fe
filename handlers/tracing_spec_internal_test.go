package handlers

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/leasegate/leasegate/api"
)

// TestTheSpecListsTraceContextWhereRequestsAreTraced: api/openapi.yaml
// documents the traceparent and tracestate headers on every operation
// whose requests traceRequests continues a trace for, and on no other
// (untraced: the probes and the scrape).
func TestTheSpecListsTraceContextWhereRequestsAreTraced(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(api.Spec)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			headers := map[string]bool{}
			for _, p := range append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...) {
				if p.Value.In == openapi3.ParameterInHeader {
					headers[p.Value.Name] = true
				}
			}
			// The untraced routes have no path parameters: their Echo
			// and OpenAPI paths are the same text.
			want := !untraced[path]
			for _, h := range []string{"traceparent", "tracestate"} {
				if headers[h] != want {
					t.Errorf("%s %s: header %s listed: got %v, want %v", method, path, h, headers[h], want)
				}
			}
			n++
		}
	}
	if n < 40 {
		t.Errorf("checked %d operations, want every operation of openapi.yaml", n)
	}
}
