package abuse

import (
	"strings"
	"testing"
	"time"
)

func TestParsePolicies(t *testing.T) {
	base := DefaultPolicies()
	base.Default.MaxAttempts = 7

	t.Run("a lock inherits what it leaves out from the merged default", func(t *testing.T) {
		p, err := ParsePolicies(strings.NewReader(`{
			"default": {"ban_after_flags": 3, "ban_seconds": 600},
			"locks": {"login": {"max_attempts": 3, "shadow": true}},
			"allowlist": ["health-probe"],
			"flag_retention_seconds": 86400
		}`), base)
		if err != nil {
			t.Fatal(err)
		}
		want := Policy{MaxAttempts: 3, BanAfterFlags: 3, BanFor: 10 * time.Minute, Shadow: true}
		if got := p.For("login"); got != want {
			t.Errorf("got login %+v, want %+v", got, want)
		}
		if got := p.For("other").MaxAttempts; got != 7 {
			t.Errorf("got default max_attempts %d, want 7 from the flag", got)
		}
		if !p.Allowlist["health-probe"] || p.FlagRetention != 24*time.Hour {
			t.Errorf("got allowlist %v retention %v, want health-probe and 24h", p.Allowlist, p.FlagRetention)
		}
	})

	bad := map[string]string{
		"an unknown field":                 `{"defualt": {}}`,
		"max_attempts 0":                   `{"default": {"max_attempts": 0}}`,
		"a ban length without a threshold": `{"locks": {"x": {"ban_seconds": 60}}}`,
		"a lock name with a slash":         `{"locks": {"a/b": {}}}`,
		"a fraction":                       `{"default": {"max_attempts": 2.5}}`,
		"two objects":                      `{} {}`,
	}
	for name, src := range bad {
		t.Run("rejects "+name, func(t *testing.T) {
			if _, err := ParsePolicies(strings.NewReader(src), base); err == nil {
				t.Errorf("got nil error for %s, want one", src)
			}
		})
	}
}
