package opsui_test

import (
	"strings"
	"testing"

	"github.com/leasegate/leasegate/abuse"
)

// The abuse review links to the Locks and Audit views when the operator
// tools are wired, so an operator finds them from the page they land on.
func TestTheAbuseReviewLinksTheLocksAndAuditViews(t *testing.T) {
	t.Parallel()
	env := newAbuseEnv(t, abuse.DefaultPolicies())
	_, body, _ := opsGet(t, env, "/ops/")
	for _, want := range []string{`<nav class="views">`, `href="/ops/locks"`, `href="/ops/audit"`} {
		if !strings.Contains(body, want) {
			t.Errorf("got /ops/ without %s", want)
		}
	}
	_, locks, _ := opsGet(t, env, "/ops/locks")
	if !strings.Contains(locks, `href="/ops/"`) {
		t.Error("got the Locks view without a link back to the abuse review")
	}
}
