package handlers_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// An unexpected script reply is a 500 "internal" problem that reveals
// nothing, is logged, and is never a grant.
func TestAnUnexpectedScriptReplyIsAnInternalError(t *testing.T) {
	t.Parallel()
	// Every script answers "surprise", a reply no script documents, as a
	// script edited without its decoder would.
	h := apptest.NewApp(t, nil, apptest.Options{
		Locks: redislock.NewService(redislock.New(redistest.ReplyScripter{Reply: "surprise"}, redislock.Config{}), nil),
	})
	logs := h.Log
	for _, req := range []struct{ method, target, body string }{
		{http.MethodPost, "/locks/r", `{"owner":"svc-a","ttl_seconds":30}`},
		{http.MethodGet, "/locks/r", ""},
		{http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":30}`},
		{http.MethodDelete, "/locks/r?owner=svc-a", ""},
	} {
		t.Run(req.method+" "+req.target, func(t *testing.T) {
			p := h.Do(t, req.method, req.target, req.body).Problem(t, http.StatusInternalServerError, "internal")
			if strings.Contains(p.Detail, "surprise") || strings.Contains(p.Detail, "redislock") {
				t.Errorf("got detail %q, want nothing about the cause", p.Detail)
			}
		})
	}
	if got := strings.Count(logs.String(), `"msg":"request failed"`); got != 4 {
		t.Errorf("got %d 'request failed' log lines, want 4: %s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "unexpected script reply") {
		t.Errorf("got logs %s, want the cause logged", logs.String())
	}
}
