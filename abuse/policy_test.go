package abuse

import (
	"strings"
	"testing"
	"time"
)

func TestParsePolicies(t *testing.T) {
	t.Parallel()
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

	t.Run("escalation fields, and a lock inherits them", func(t *testing.T) {
		p, err := ParsePolicies(strings.NewReader(`{
			"default": {"ban_after_flags": 1, "ban_seconds": 60, "factor": 2, "max_ban_seconds": 3600},
			"locks": {"login": {"factor": 1.5}}
		}`), base)
		if err != nil {
			t.Fatal(err)
		}
		want := Policy{MaxAttempts: 7, BanAfterFlags: 1, BanFor: time.Minute, Factor: 1.5, MaxBanFor: time.Hour}
		if got := p.For("login"); got != want {
			t.Errorf("got login %+v, want %+v", got, want)
		}
		if got := p.For("other").BanLength(3); got != 4*time.Minute {
			t.Errorf("got third default ban %v, want 4m", got)
		}
	})

	bad := map[string]string{
		"a factor below 1":                 `{"default": {"factor": 0.5}}`,
		"a cap below the first ban":        `{"default": {"ban_after_flags": 1, "ban_seconds": 60, "max_ban_seconds": 30}}`,
		"a cap over a year":                `{"default": {"max_ban_seconds": 31536001}}`,
		"an unknown field":                 `{"defualt": {}}`,
		"max_attempts 0":                   `{"default": {"max_attempts": 0}}`,
		"a ban length without a threshold": `{"locks": {"x": {"ban_seconds": 60}}}`,
		"a lock name with a slash":         `{"locks": {"a/b": {}}}`,
		"a fraction":                       `{"default": {"max_attempts": 2.5}}`,
		"two objects":                      `{} {}`,
		"a rolling span of 0":              `{"default": {"rolling_window_seconds": 0}}`,
		"a rolling span over a day":        `{"locks": {"x": {"rolling_window_seconds": 86401}}}`,
		"a huge rolling span":              `{"default": {"rolling_window_seconds": 9223372036}}`,
		"a rolling span as a string":       `{"default": {"rolling_window_seconds": "60"}}`,
	}
	for name, src := range bad {
		t.Run("rejects "+name, func(t *testing.T) {
			_, err := ParsePolicies(strings.NewReader(src), base)
			if err == nil {
				t.Errorf("got nil error for %s, want one", src)
			} else if strings.Contains(name, "rolling") && !strings.Contains(err.Error(), "rolling_window_seconds") {
				t.Errorf("got %v, want it to name rolling_window_seconds", err)
			}
		})
	}
	t.Run("a rolling span per lock and in the default", func(t *testing.T) {
		p, err := ParsePolicies(strings.NewReader(`{"default": {"rolling_window_seconds": 60}, "locks": {"a": {}, "b": {"rolling_window_seconds": 86400}}}`), base)
		if err != nil {
			t.Fatal(err)
		}
		if p.For("a").Rolling != time.Minute || p.For("b").Rolling != 24*time.Hour || p.For("c").Rolling != time.Minute {
			t.Errorf("got %v, %v, %v; want 1m inherited, 24h, 1m", p.For("a").Rolling, p.For("b").Rolling, p.For("c").Rolling)
		}
	})
}
