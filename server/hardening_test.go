package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawRoundTrip writes req on a new connection and reads one response.
func rawRoundTrip(t *testing.T, s *Server, req string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatalf("write: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

func TestSlowlorisIsCutOffByTheReadHeaderTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	cfg := testConfig(t)
	cfg.ReadHeaderTimeout = timeout
	s := start(t, cfg, nil)

	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	began := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, conn) // returns when the server hangs up
		closed <- time.Since(began)
	}()

	req := "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nX-Slow: " + strings.Repeat("s", 40) + "\r\n\r\n"
	sent := 0
	var after time.Duration
drip:
	for sent < len(req) {
		if _, err := conn.Write([]byte{req[sent]}); err != nil {
			break // the server already closed the connection
		}
		sent++
		select {
		case after = <-closed:
			break drip
		case <-time.After(time.Second): // one header byte per second
		}
	}
	if after == 0 {
		t.Fatalf("sent all %d bytes at one per second and the connection stayed open", len(req))
	}
	if after < timeout-50*time.Millisecond || after > 5*time.Second {
		t.Errorf("connection closed after %v, want about %v (between %v and 5s)", after, timeout, timeout-50*time.Millisecond)
	}
	if sent >= len(req) {
		t.Errorf("got the whole request through (%d bytes), want it cut off", sent)
	}

	t.Run("a prompt request on the same server is served", func(t *testing.T) {
		res, _ := rawRoundTrip(t, s, "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nConnection: close\r\n\r\n")
		if res.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})
}

func TestOversizeHeadersGet431Problem(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxHeaderBytes = 1 << 10
	s := start(t, cfg, nil)
	// net/http reads up to MaxHeaderBytes plus 4 KiB of slack before it
	// gives up, so send well over both.
	big := strings.Repeat("h", 8<<10)
	res, body := rawRoundTrip(t, s, "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nX-Big: "+big+"\r\n\r\n")
	if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("got %d %q, want 431", res.StatusCode, body)
	}
	if slug := problemType(t, res, body); slug != "payload-too-large" {
		t.Errorf("got problem type %q, want payload-too-large", slug)
	}

	t.Run("headers under the limit are served", func(t *testing.T) {
		res, _ := rawRoundTrip(t, s, "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nX-Small: "+strings.Repeat("h", 512)+"\r\nConnection: close\r\n\r\n")
		if res.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})
	t.Run("a request net/http cannot parse gets a 400 problem", func(t *testing.T) {
		res, body := rawRoundTrip(t, s, "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nno colon here\r\n\r\n")
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("got %d %q, want 400", res.StatusCode, body)
		}
		if slug := problemType(t, res, body); slug != "malformed-request" {
			t.Errorf("got problem type %q, want malformed-request", slug)
		}
	})
}

func TestOversizeBodyGets413Problem(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.HTTP.BodyLimit = 1 << 10
	s := start(t, cfg, nil)
	body := `{"owner":"` + strings.Repeat("o", 2<<10) + `","ttl_seconds":30}`
	for _, tc := range []struct{ name, framing string }{
		{"with a Content-Length", "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body},
		{"chunked, no Content-Length", "Transfer-Encoding: chunked\r\n\r\n" + chunk(body[:600]) + chunk(body[600:]) + "0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, got := rawRoundTrip(t, s, "POST /locks/big HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nConnection: close\r\n"+tc.framing)
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("got %d %q, want 413", res.StatusCode, got)
			}
			if slug := problemType(t, res, got); slug != "payload-too-large" {
				t.Errorf("got problem type %q, want payload-too-large", slug)
			}
		})
	}
	t.Run("nothing was locked", func(t *testing.T) {
		if res, b := get(t, s, "/locks/big", ""); res.StatusCode != http.StatusNotFound {
			t.Errorf("got %d %s, want 404", res.StatusCode, b)
		}
	})
}

func chunk(s string) string {
	return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n"
}

func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		proxies []string
		remote  string
		xff     string
		want    string
	}{
		{"no proxies: X-Forwarded-For is ignored", nil, "198.51.100.7:5000", "203.0.113.9", "198.51.100.7"},
		{"no proxies: a loopback peer's header is ignored too", nil, "127.0.0.1:5000", "203.0.113.9", "127.0.0.1"},
		{"a trusted proxy's header names the client", []string{"10.0.0.0/8"}, "10.1.2.3:5000", "203.0.113.9", "203.0.113.9"},
		{"an untrusted peer's header is ignored", []string{"10.0.0.0/8"}, "198.51.100.7:5000", "203.0.113.9", "198.51.100.7"},
		{"private addresses are not trusted unless listed", []string{"10.0.0.0/8"}, "192.168.1.1:5000", "203.0.113.9", "192.168.1.1"},
		{"loopback is not trusted unless listed", []string{"10.0.0.0/8"}, "127.0.0.1:5000", "203.0.113.9", "127.0.0.1"},
		{"a client-forged entry left of the real one is skipped", []string{"10.0.0.0/8"}, "10.1.2.3:5000", "1.2.3.4, 203.0.113.9", "203.0.113.9"},
		{"a chain of trusted proxies is walked", []string{"10.0.0.0/8", "172.16.0.9"}, "10.1.2.3:5000", "203.0.113.9, 172.16.0.9, 10.0.0.5", "203.0.113.9"},
		{"an IPv6 proxy range", []string{"fd00::/8"}, "[fd00::1]:5000", "2001:db8::7", "2001:db8::7"},
		{"garbage in the header falls back to the peer", []string{"10.0.0.0/8"}, "10.1.2.3:5000", "not-an-ip", "10.1.2.3"},
		{"no header: the peer", []string{"10.0.0.0/8"}, "10.1.2.3:5000", "", "10.1.2.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x, err := ipExtractor(tc.proxies)
			if err != nil {
				t.Fatalf("ipExtractor: %v", err)
			}
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.RemoteAddr = tc.remote
			if tc.xff != "" {
				req.Header.Set("X-Forwarded-For", tc.xff)
			}
			if got := x(req); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("a bad CIDR is a config error", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.TrustedProxies = []string{"10.0.0.0/33"}
		if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "trusted-proxies") {
			t.Errorf("got %v, want a trusted-proxies error", err)
		}
	})
	t.Run("the server logs the client IP the list decides", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.TrustedProxies = []string{"10.0.0.0/8"}
		log, logs := observedLogger()
		s, err := New(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.RemoteAddr = "10.9.9.9:1234"
		req.Header.Set("X-Forwarded-For", "203.0.113.50")
		s.Handler().ServeHTTP(httptest.NewRecorder(), req)
		entries := logs.FilterMessage("request").All()
		if len(entries) != 1 {
			t.Fatalf("got %d request log lines, want 1", len(entries))
		}
		if got := entries[0].ContextMap()["remote_ip"]; got != "203.0.113.50" {
			t.Errorf("got remote_ip %v, want 203.0.113.50", got)
		}
	})
}
