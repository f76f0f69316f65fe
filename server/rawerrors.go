package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// net/http answers some requests itself, before any Handler runs, in
// plain text. In (*conn).serve (net/http/server.go), when
// (*conn).readRequest fails, it writes a canned response with
// fmt.Fprintf straight to the net.Conn (c.rwc) and closes it:
//   - errTooLarge (the header block passed MaxHeaderBytes): 431;
//   - a Transfer-Encoding it does not implement: 501 with the body
//     "Unsupported transfer encoding";
//   - a statusError: "400 Bad Request: <why>" for a missing or malformed
//     Host header or an invalid header name, "505 HTTP Version Not
//     Supported: unsupported protocol version";
//   - anything else it cannot parse: a bare 400.
//
// That path bypasses the Handler, the ResponseWriter and ErrorLog, and
// http.Server has no hook for it (Go 1.26: ConnState, ConnContext and
// Protocols see no bytes, and there is no error-response field), so the
// net.Conn is the only place to change those answers. So that every error
// a client sees is problem+json, the listener's connections replace
// exactly those writes, byte for byte (one Fprintf is one Write), with
// problem+json answers of the same status. A handler's response never
// matches: net/http adds a Date header to every one. If a Go release
// words one differently it passes through unchanged, and
// TestNetHTTPStillWritesTheAnswersWeRewrite fails.
//
// (A 417 for an unknown Expect is written through the ResponseWriter with
// no body, so it is left alone.)
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return problemConn{c}, nil
}

type problemConn struct{ net.Conn }

// goErrorHeaders are the header lines of net/http's canned answers.
const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// goAnswer is net/http's canned answer for status, whose status line
// doubles as the body: "431 Request Header Fields Too Large", or with a
// reason, "400 Bad Request: missing required Host header".
func goAnswer(status int, reason string) string {
	line := strconv.Itoa(status) + " " + http.StatusText(status)
	if reason != "" {
		line += ": " + reason
	}
	return "HTTP/1.1 " + line + goErrorHeaders + line
}

// malformedHTTP replaces goAnswer(status, reason).
func malformedHTTP(status int, reason string) []byte {
	detail := "malformed HTTP request"
	if reason != "" {
		detail += ": " + reason
	}
	return rawProblem(leasegate.NewError(leasegate.CodeMalformed, detail), status)
}

// goUnsupportedTE is the one canned answer whose body is not its status line.
const goUnsupportedTE = "HTTP/1.1 501 Not Implemented" + goErrorHeaders + "Unsupported transfer encoding"

var rawRewrites = map[string][]byte{
	goAnswer(http.StatusRequestHeaderFieldsTooLarge, ""): rawProblem(
		leasegate.NewError(leasegate.CodePayloadTooLarge, "the request's header block is larger than the server accepts (--max-header-bytes)"),
		http.StatusRequestHeaderFieldsTooLarge),
	goAnswer(http.StatusBadRequest, ""):                                          malformedHTTP(http.StatusBadRequest, ""),
	goAnswer(http.StatusBadRequest, "missing required Host header"):              malformedHTTP(http.StatusBadRequest, "missing required Host header"),
	goAnswer(http.StatusBadRequest, "malformed Host header"):                     malformedHTTP(http.StatusBadRequest, "malformed Host header"),
	goAnswer(http.StatusBadRequest, "invalid header name"):                       malformedHTTP(http.StatusBadRequest, "invalid header name"),
	goAnswer(http.StatusHTTPVersionNotSupported, "unsupported protocol version"): malformedHTTP(http.StatusHTTPVersionNotSupported, "unsupported protocol version"),
	goUnsupportedTE: malformedHTTP(http.StatusNotImplemented, "unsupported Transfer-Encoding"),
}

// rawMax is the length of the longest canned answer.
var rawMax = func() int {
	n := 0
	for k := range rawRewrites {
		n = max(n, len(k))
	}
	return n
}()

// rawProblem is a whole HTTP/1.1 response carrying e with status,
// closing the connection as net/http's own answer does.
func rawProblem(e *leasegate.Error, status int) []byte {
	p := api.ProblemOf(e, status)
	body, err := json.Marshal(p)
	if err != nil {
		panic("server: marshal problem: " + err.Error()) // static input: a bug
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(p.Status) + " " + http.StatusText(p.Status) + "\r\n")
	b.WriteString("Content-Type: " + api.ProblemContentType + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)+1) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	b.WriteByte('\n')
	return b.Bytes()
}

var rawPrefix = []byte("HTTP/1.1 ")

func (c problemConn) Write(p []byte) (int, error) {
	if len(p) <= rawMax && bytes.HasPrefix(p, rawPrefix) {
		if r, ok := rawRewrites[string(p)]; ok {
			if _, err := c.Conn.Write(r); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}
