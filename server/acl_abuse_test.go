package server_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/server"
)

// The ACL user of docs/deployment.md must be able to run every route, the
// user locks and the ops review included, not only the resource locks:
// a missing command would turn an operator's clear into a 503.
func TestRedisACLRunsUserLocksAndTheOpsReview(t *testing.T) {
	t.Parallel()
	srv := startWithACLUser(t)
	cfg := server.DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.RedisURL = "redis://leasegate:s3cret@" + srv.Addr()
	cfg.AbuseLog = io.Discard
	s := newServer(t, cfg)

	for i := range 5 {
		if code := apptest.Do(t, s.Handler(), http.MethodPost, "/user-locks/login/acl-user", "").StatusCode; code != http.StatusOK {
			t.Fatalf("attempt %d: got %d, want 200", i+1, code)
		}
	}
	steps := []struct {
		method, path, body string
		want               int
	}{
		{http.MethodGet, "/abuse/flagged", "", http.StatusOK},
		{http.MethodGet, "/abuse/flagged/acl-user", "", http.StatusOK},
		{http.MethodPost, "/abuse/bans/acl-user", `{"seconds":60,"reason":"acl"}`, http.StatusCreated},
		{http.MethodPost, "/user-locks/login/acl-user", "", http.StatusTooManyRequests},
		{http.MethodDelete, "/abuse/bans/acl-user", "", http.StatusNoContent},
		{http.MethodDelete, "/abuse/flagged/acl-user", "", http.StatusNoContent},
		{http.MethodDelete, "/user-locks/login/acl-user", "", http.StatusNoContent},
	}
	for _, st := range steps {
		if code := apptest.Do(t, s.Handler(), st.method, st.path, st.body).StatusCode; code != st.want {
			t.Errorf("%s %s as the ACL user: got %d, want %d", st.method, st.path, code, st.want)
		}
	}
}
