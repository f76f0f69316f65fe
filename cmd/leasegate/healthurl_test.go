package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLEASEGATE_URLIsTheBaseURLForHealthcheckToo: one LEASEGATE_URL
// serves lock, abuse, load and healthcheck; healthcheck appends /readyz.
func TestLEASEGATE_URLIsTheBaseURLForHealthcheckToo(t *testing.T) {
	t.Parallel()
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		switch r.URL.Path {
		case "/readyz", "/healthz", "/gw/readyz":
			w.WriteHeader(http.StatusOK)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name     string
		env, arg string
		wantPath string
	}{
		{"LEASEGATE_URL as the base URL", srv.URL, "", "/readyz"},
		{"with a trailing slash", srv.URL + "/", "", "/readyz"},
		{"under a path prefix", srv.URL + "/gw", "", "/gw/readyz"},
		{"--url as the base URL", "", srv.URL, "/readyz"},
		{"an old-style /readyz URL is used as it is", srv.URL + "/readyz", "", "/readyz"},
		{"so is /healthz", "", srv.URL + "/healthz", "/healthz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths = nil
			env := map[string]string{"LEASEGATE_URL": tc.env}
			args := []string{"healthcheck"}
			if tc.arg != "" {
				args = append(args, "--url", tc.arg)
			}
			r := runCLI(t, env, args...)
			if r.code != 0 {
				t.Fatalf("got exit %d (%s%s), want 0", r.code, r.stdout, r.stderr)
			}
			if len(paths) != 1 || paths[0] != tc.wantPath {
				t.Errorf("got requests to %q, want one to %s", paths, tc.wantPath)
			}
		})
	}
	t.Run("the same LEASEGATE_URL drives a client command", func(t *testing.T) {
		url := startGateway(t)
		env := map[string]string{"LEASEGATE_URL": url}
		if r := runCLI(t, env, "healthcheck"); r.code != 0 {
			t.Errorf("healthcheck: got exit %d (%s), want 0", r.code, r.stderr)
		}
		if r := runCLI(t, env, "abuse", "list"); r.code != 0 {
			t.Errorf("abuse list: got exit %d (%s), want 0", r.code, r.stderr)
		}
	})
	t.Run("a URL that is not http(s) is a usage error", func(t *testing.T) {
		if r := runCLI(t, nil, "healthcheck", "--url", "localhost:8080"); r.code != 2 {
			t.Errorf("got exit %d (%s), want 2", r.code, r.stderr)
		}
	})
}
