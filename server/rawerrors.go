package server

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strconv"

	"github.com/leasegate/leasegate"
)

// Go's http.Server answers some requests itself, before any handler runs,
// with a text/plain body: headers over MaxHeaderBytes (431) and requests
// it cannot parse (400). So that every error a client sees is
// problem+json, the listener's connections replace exactly those canned
// responses, byte for byte as net/http writes them (one Write on the raw
// connection), with problem+json ones. A handler's response can never
// match them: net/http always adds a Date header to those. If a future Go
// words them differently they pass through unchanged (the tests notice).
type problemListener struct{ net.Listener }

func (l problemListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return problemConn{c}, nil
}

type problemConn struct{ net.Conn }

const goErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

var rawRewrites = map[string][]byte{
	"HTTP/1.1 431 Request Header Fields Too Large" + goErrorHeaders + "431 Request Header Fields Too Large": rawProblem(
		&leasegate.Error{Code: leasegate.CodePayloadTooLarge, Status: http.StatusRequestHeaderFieldsTooLarge,
			Message: "the request's header block is larger than the server accepts (--max-header-bytes)"}),
	"HTTP/1.1 400 Bad Request" + goErrorHeaders + "400 Bad Request": rawProblem(
		leasegate.Errorf(leasegate.CodeMalformed, "malformed HTTP request")),
}

// rawProblem is a whole HTTP/1.1 response carrying p, closing the
// connection as net/http's own answer does.
func rawProblem(e *leasegate.Error) []byte {
	p := e.Problem()
	body, err := json.Marshal(p)
	if err != nil {
		panic("server: marshal problem: " + err.Error()) // static input: a bug
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(p.Status) + " " + http.StatusText(p.Status) + "\r\n")
	b.WriteString("Content-Type: " + leasegate.ProblemContentType + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)+1) + "\r\n")
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(body)
	b.WriteByte('\n')
	return b.Bytes()
}

var rawPrefix = []byte("HTTP/1.1 4")

func (c problemConn) Write(p []byte) (int, error) {
	if len(p) < 200 && bytes.HasPrefix(p, rawPrefix) {
		if r, ok := rawRewrites[string(p)]; ok {
			if _, err := c.Conn.Write(r); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return c.Conn.Write(p)
}
