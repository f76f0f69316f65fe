package opsui_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
)

// The Locks view shows the elections with a leader: name, leader, term,
// value (made visible, as every user-supplied text), time left.
func TestTheLocksViewShowsElections(t *testing.T) {
	t.Parallel()
	env := apptest.NewApp(t, redistest.OnMini(t), apptest.Options{Primitives: true, HeaderAuth: true})
	_, body, _ := opsGet(t, env, "/ops/locks")
	if !strings.Contains(body, "No election has a leader") {
		t.Errorf("got a Locks view without its empty Elections table")
	}
	res, err := env.Elections.Campaign(context.Background(), "", leasegate.CampaignRequest{
		Name: "nightly-report", Candidate: "node-a", Value: "10.0.0.1:8080\x01", TTL: time.Minute,
	})
	if err != nil || !res.Elected {
		t.Fatalf("campaign: got %+v, %v", res, err)
	}
	_, body, _ = opsGet(t, env, "/ops/locks")
	for _, want := range []string{
		`data-election="nightly-report"`, "<code>node-a</code>",
		"<code>" + strconv.FormatInt(res.Leadership.Term, 10) + "</code>",
		"10.0.0.1:8080",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("got the Locks view without %s", want)
		}
	}
	if strings.Contains(body, "\x01") {
		t.Error("got a control character of the value written raw into the page")
	}
	_, body, _ = opsGet(t, env, "/ops/locks?prefix=other")
	if strings.Contains(body, `data-election="nightly-report"`) {
		t.Error("got an election outside the prefix")
	}
}
