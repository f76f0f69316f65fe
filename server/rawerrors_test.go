package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// goAnswerCases are requests net/http answers itself, before any handler,
// with one of the canned answers in rawRewrites.
var goAnswerCases = []struct {
	name, req string
	status    int
	slug      string
}{
	{"a header block over MaxHeaderBytes", "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nX-Big: " + strings.Repeat("h", 8<<10) + "\r\n\r\n",
		http.StatusRequestHeaderFieldsTooLarge, "payload-too-large"},
	{"a header line without a colon", "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nno colon here\r\n\r\n",
		http.StatusBadRequest, "malformed-request"},
	{"no Host header", "GET /healthz HTTP/1.1\r\n\r\n",
		http.StatusBadRequest, "malformed-request"},
	{"a malformed Host header", "GET /healthz HTTP/1.1\r\nHost: lease gate\r\n\r\n",
		http.StatusBadRequest, "malformed-request"},
	{"a space in a header name", "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nBad Name: v\r\n\r\n",
		http.StatusBadRequest, "malformed-request"},
	{"HTTP/3.0 on an HTTP/1 connection", "GET /healthz HTTP/3.0\r\nHost: leasegate\r\n\r\n",
		http.StatusHTTPVersionNotSupported, "malformed-request"},
	{"an unknown Transfer-Encoding", "POST /locks/r HTTP/1.1\r\nHost: leasegate\r\nTransfer-Encoding: gzip\r\n\r\n",
		http.StatusNotImplemented, "malformed-request"},
}

// writeRecorder hands every Write on its connections to writes.
type writeRecorder struct {
	net.Listener
	writes chan []byte
}

func (l writeRecorder) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return recordedConn{c, l.writes}, nil
}

type recordedConn struct {
	net.Conn
	writes chan []byte
}

func (c recordedConn) Write(p []byte) (int, error) {
	c.writes <- append([]byte(nil), p...)
	return c.Conn.Write(p)
}

// If this fails, a Go release has changed the words or bytes of one of
// its own answers: update rawRewrites, or the answer reaches clients as
// text/plain.
func TestNetHTTPStillWritesTheAnswersWeRewrite(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	writes := make(chan []byte, 16)
	srv := &http.Server{
		Handler:        http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Errorf("handler ran for %s", r.URL) }),
		MaxHeaderBytes: 1 << 10,
	}
	go func() { _ = srv.Serve(writeRecorder{ln, writes}) }()
	t.Cleanup(func() { _ = srv.Close() })

	seen := map[string]bool{}
	for _, tc := range goAnswerCases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, tc.req); err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(conn)
			select {
			case w := <-writes:
				if _, ok := rawRewrites[string(w)]; !ok {
					t.Errorf("net/http wrote %q, which is not in rawRewrites", w)
				}
				seen[string(w)] = true
			case <-time.After(5 * time.Second):
				t.Fatal("net/http wrote nothing")
			}
		})
	}
	for k := range rawRewrites {
		if !seen[k] {
			t.Errorf("no case here makes net/http write %q", k)
		}
	}
}

func TestNetHTTPsOwnAnswersAreProblems(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.MaxHeaderBytes = 1 << 10
	s := start(t, cfg, nil)
	for _, tc := range goAnswerCases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := rawRoundTrip(t, s, tc.req)
			if res.StatusCode != tc.status {
				t.Fatalf("got %d %q, want %d", res.StatusCode, body, tc.status)
			}
			if slug := problemType(t, res, body); slug != tc.slug {
				t.Errorf("got problem type %q, want %s", slug, tc.slug)
			}
			if !res.Close {
				t.Errorf("got a connection kept open, want Connection: close as net/http's own answer")
			}
		})
	}
	t.Run("a handler's answer passes unchanged", func(t *testing.T) {
		res, body := rawRoundTrip(t, s, "GET /healthz HTTP/1.1\r\nHost: leasegate\r\nConnection: close\r\n\r\n")
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("got %d %s %q, want 200 application/json", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	})
}
