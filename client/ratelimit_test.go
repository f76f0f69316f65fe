package client_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/leasegate/leasegate/client"
)

func TestParseRateLimit(t *testing.T) {
	t.Parallel()
	h := func(policy, limit string) http.Header {
		out := http.Header{}
		if policy != "" {
			out.Set("RateLimit-Policy", policy)
		}
		if limit != "" {
			out.Set("RateLimit", limit)
		}
		return out
	}
	t.Run("reads the policy and what is left", func(t *testing.T) {
		got, ok := client.ParseRateLimit(h(`"login";q=5;w=60`, `"login";r=2;t=30`))
		want := client.RateLimit{Policy: "login", Quota: 5, Window: time.Minute, Remaining: 2, Reset: 30 * time.Second}
		if !ok || got != want {
			t.Errorf("got %+v %v, want %+v true", got, ok, want)
		}
	})
	t.Run("skips parameters it does not know", func(t *testing.T) {
		got, ok := client.ParseRateLimit(h(`"a";q=1;w=2;pk=:YWJj:;qu="requests"`, `"a";r=0;t=1, "b";r=3`))
		if !ok || got.Quota != 1 || got.Remaining != 0 || got.Reset != time.Second {
			t.Errorf("got %+v %v", got, ok)
		}
	})
	for name, hdr := range map[string]http.Header{
		"no fields":           h("", ""),
		"only the policy":     h(`"a";q=1;w=2`, ""),
		"names that differ":   h(`"a";q=1;w=2`, `"b";r=0;t=1`),
		"a token, no string":  h(`a;q=1;w=2`, `a;r=0;t=1`),
		"no remaining":        h(`"a";q=1;w=2`, `"a";t=1`),
		"the old draft shape": h(`5;w=60`, ""),
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if got, ok := client.ParseRateLimit(hdr); ok {
				t.Errorf("got %+v true, want false", got)
			}
		})
	}
}
