package opsui_test

import (
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate/abuse"
)

// The flag record's evidence (the attempts of the window that flagged)
// and the ban's record (who, when, why) reach the API and the /ops/ page.
func TestFlagEvidenceAndBanRecordAreShown(t *testing.T) {
	t.Parallel()
	pol := abuse.DefaultPolicies()
	pol.Default.MaxAttempts = 3
	env := newAbuseEnv(t, pol)
	for i := 0; i < 4; i++ {
		env.Do(t, "POST", "/user-locks/login/<b>eve</b>", `{"ttl_seconds": 60}`).Want(t, 200)
		env.Backend.Advance(t, 250*time.Millisecond)
	}
	env.Do(t, "POST", "/abuse/bans/%3Cb%3Eeve%3C%2Fb%3E", `{"seconds": 600, "reason": "<i>scripted</i> logins"}`).Want(t, 201)

	t.Run("the API lists the attempt times, oldest first", func(t *testing.T) {
		a := env.Do(t, "GET", "/abuse/flagged/%3Cb%3Eeve%3C%2Fb%3E", "").Want(t, 200)
		f := a.Object["flags"].([]any)[0].(map[string]any)
		want := []any{"2026-11-30T09:30:00.000Z", "2026-11-30T09:30:00.250Z", "2026-11-30T09:30:00.500Z", "2026-11-30T09:30:00.750Z"}
		got, _ := f["attempts_at"].([]any)
		if len(got) != len(want) {
			t.Fatalf("got attempts_at %v, want %v", f["attempts_at"], want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("attempts_at[%d]: got %v, want %v", i, got[i], want[i])
			}
		}
		ban := a.Object["ban"].(map[string]any)
		if ban["banned_at"] != "2026-11-30T09:30:01.000Z" || ban["source"] != "operator" {
			t.Errorf("got ban %v", ban)
		}
	})

	t.Run("the page shows a timeline and who banned, when and why, escaped", func(t *testing.T) {
		_, body, _ := opsGet(t, env, "/ops/")
		if strings.Contains(body, "<b>eve") || strings.Contains(body, "<i>scripted") {
			t.Fatal("got unescaped user input on the page")
		}
		if got := strings.Count(body, `class="tick"`); got != 4 {
			t.Errorf("got %d ticks on the timeline, want 4", got)
		}
		for _, want := range []string{
			`<svg class="timeline"`,
			`<rect x="0" `, `<rect x="997" `,
			`<title>2026-11-30T09:30:00.250Z</title>`,
			`4 attempts of the flagged window`,
			`<p class="by">by <code>`,
			`on <time datetime="2026-11-30T09:30:01.000Z">`,
			`&lt;i&gt;scripted&lt;/i&gt; logins`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("got a page without %s", want)
			}
		}
	})
}
