package metrics_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasegate/leasegate/metrics"
)

// TestEveryFamilyIsInTheDocs: each collector of metrics.Metrics is named,
// with its labels, in docs/metrics.md.
func TestEveryFamilyIsInTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(prometheus.NewRegistry())
	fq := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	v := reflect.ValueOf(m).Elem()
	n := 0
	for i := 0; i < v.NumField(); i++ {
		if !v.Field(i).CanInterface() {
			continue // reg
		}
		c, ok := v.Field(i).Interface().(prometheus.Collector)
		if !ok {
			continue
		}
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			sm := fq.FindStringSubmatch(d.String())
			if sm == nil {
				t.Fatalf("cannot read %s", d)
			}
			n++
			row := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(sm[1]) + "` \\|[^|]*\\|([^|]*)\\|")
			got := row.FindSubmatch(doc)
			if got == nil {
				t.Errorf("%s is not in the table of docs/metrics.md", sm[1])
				continue
			}
			for _, l := range strings.FieldsFunc(sm[2], func(r rune) bool { return r == ',' || r == ' ' }) {
				if !strings.Contains(string(got[1]), "`"+l+"`") {
					t.Errorf("%s: label %s is not in its row of docs/metrics.md (%q)", sm[1], l, got[1])
				}
			}
		}
	}
	if n < 10 {
		t.Errorf("found %d families, want every collector of metrics.Metrics", n)
	}
}
