package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	check := func(t *testing.T, args []string, getenv func(string) string) (int, string) {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"healthcheck"}, args...), nil, &out, &errb, getenv)
		return code, out.String() + errb.String()
	}

	// readyServer answers 200 on /readyz and 404 elsewhere.
	readyServer := func(t *testing.T) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		t.Cleanup(srv.Close)
		return srv
	}

	t.Run("a 200 from the URL exits 0", func(t *testing.T) {
		srv := readyServer(t)
		if code, out := check(t, []string{"--url", srv.URL + "/readyz"}, noEnv); code != 0 {
			t.Fatalf("got exit %d (%s), want 0", code, out)
		}
	})

	t.Run("a 503 exits 1 and says why", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer srv.Close()
		code, out := check(t, []string{"--url", srv.URL}, noEnv)
		if code != 1 || !strings.Contains(out, "503") {
			t.Fatalf("got exit %d (%s), want 1 naming 503", code, out)
		}
	})

	t.Run("nothing listening exits 1", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		if code, out := check(t, []string{"--url", addr, "--timeout", "2s"}, noEnv); code != 1 {
			t.Fatalf("got exit %d (%s), want 1", code, out)
		}
	})

	t.Run("without --url it asks /readyz on LEASEGATE_ADDR, 0.0.0.0 read as loopback", func(t *testing.T) {
		srv := readyServer(t)
		port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
		env := func(k string) string {
			if k == "LEASEGATE_ADDR" {
				return "0.0.0.0:" + port
			}
			return ""
		}
		if code, out := check(t, nil, env); code != 0 {
			t.Fatalf("got exit %d (%s), want 0", code, out)
		}
	})

	t.Run("a gateway on a Unix socket is asked through it, by --url or LEASEGATE_ADDR", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "gw.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		var status atomic.Int32
		status.Store(http.StatusOK)
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(int(status.Load()))
		})}}
		srv.Start()
		t.Cleanup(srv.Close)
		if code, out := check(t, []string{"--url", "unix:" + sock}, noEnv); code != 0 || !strings.Contains(out, "healthy") {
			t.Fatalf("--url unix:%s: got exit %d (%s), want 0", sock, code, out)
		}
		env := func(k string) string {
			if k == "LEASEGATE_ADDR" {
				return "unix:" + sock
			}
			return ""
		}
		if code, out := check(t, nil, env); code != 0 {
			t.Fatalf("LEASEGATE_ADDR=unix:%s: got exit %d (%s), want 0", sock, code, out)
		}
		status.Store(http.StatusServiceUnavailable)
		if code, out := check(t, nil, env); code != 1 || !strings.Contains(out, "503") {
			t.Fatalf("a 503 over the socket: got exit %d (%s), want 1 naming 503", code, out)
		}
	})

	t.Run("a stray argument is a usage error", func(t *testing.T) {
		if code, out := check(t, []string{"extra"}, noEnv); code != 2 {
			t.Fatalf("got exit %d (%s), want 2", code, out)
		}
	})
}

func TestDefaultHealthURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ addr, want string }{
		{"", "http://127.0.0.1:8080/readyz"},
		{"0.0.0.0:8080", "http://127.0.0.1:8080/readyz"},
		{"[::]:9000", "http://127.0.0.1:9000/readyz"},
		{":7000", "http://127.0.0.1:7000/readyz"},
		{"10.0.0.5:8080", "http://10.0.0.5:8080/readyz"},
	} {
		if got := defaultHealthURL(tc.addr); got != tc.want {
			t.Errorf("defaultHealthURL(%q): got %s, want %s", tc.addr, got, tc.want)
		}
	}
}
