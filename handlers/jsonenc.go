package handlers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// The hot answers of the lock routes (LOCK, the contended answer, a
// problem) are written by hand into a pooled buffer instead of through
// encoding/json: no reflection and no encoder per answer. The bytes are
// exactly what json.Encoder with SetEscapeHTML(false) writes, trailing
// newline included; jsonenc_test.go checks that against encoding/json for
// every string the contract allows and many it does not. go-json-experiment
// was measured here and not taken: 2-4 allocations per answer instead of
// none, and a raw U+FFFD for invalid UTF-8 (docs/architecture.md, "JSON").

type jsonBuf struct{ b []byte }

var jsonBufs = sync.Pool{New: func() any { return &jsonBuf{b: make([]byte, 0, 512)} }}

func getBuf() *jsonBuf { return jsonBufs.Get().(*jsonBuf) }

func putBuf(b *jsonBuf) {
	if cap(b.b) > 16<<10 {
		return // a rare huge problem: let it go
	}
	b.b = b.b[:0]
	jsonBufs.Put(b)
}

// ctJSON and ctProblem are the Content-Type values of every answer, shared:
// net/http only reads them.
var (
	ctJSON    = []string{echo.MIMEApplicationJSON}
	ctProblem = []string{api.ProblemContentType}
)

// sendJSON writes v with status as application/json, through
// encoding/json: the answers off the hot path.
func sendJSON(c echo.Context, status int, v any) error {
	c.Response().Header()[echo.HeaderContentType] = ctJSON
	c.Response().WriteHeader(status)
	enc := json.NewEncoder(c.Response())
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// appendTime writes t as a JSON string in leasegate.TimeFormat.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, leasegate.TimeFormat)
	return append(b, '"')
}

// appendLock writes LOCK.
func appendLock(b []byte, l leasegate.Lock) []byte {
	b = append(b, `{"resource":`...)
	b = appendString(b, l.Resource)
	b = append(b, `,"owner":`...)
	b = appendString(b, l.Owner)
	b = append(b, `,"token":`...)
	b = strconv.AppendInt(b, l.Token, 10)
	b = append(b, `,"acquired_at":`...)
	b = appendTime(b, l.AcquiredAt)
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, l.ExpiresAt)
	return append(b, '}')
}

// sendAcquired writes {"acquired":true,"lock":LOCK}.
func sendAcquired(c echo.Context, l leasegate.Lock) error {
	return sendLock(c, `{"acquired":true,"lock":`, l)
}

// sendHeld writes {"lock":LOCK}.
func sendHeld(c echo.Context, l leasegate.Lock) error {
	return sendLock(c, `{"lock":`, l)
}

// sendLock writes prefix, LOCK and the closing brace.
func sendLock(c echo.Context, prefix string, l leasegate.Lock) error {
	buf := getBuf()
	b := append(buf.b, prefix...)
	b = appendLock(b, l)
	b = append(b, "}\n"...)
	return sendPooled(c, buf, b)
}

// sendContended writes {"acquired":false,"resource":...,"retry_after_ms":N}.
func sendContended(c echo.Context, resource string, retryAfterMS int64) error {
	buf := getBuf()
	b := append(buf.b, `{"acquired":false,"resource":`...)
	b = appendString(b, resource)
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, retryAfterMS, 10)
	b = append(b, "}\n"...)
	return sendPooled(c, buf, b)
}

// sendPooled writes b, built on buf's bytes, as a 200 JSON answer and
// gives buf back to the pool.
func sendPooled(c echo.Context, buf *jsonBuf, b []byte) error {
	w := c.Response()
	w.Header()[echo.HeaderContentType] = ctJSON
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	buf.b = b
	putBuf(buf)
	return err
}

// appendProblem writes p as encoding/json would.
func appendProblem(b []byte, p api.Problem) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, p.Type)
	b = append(b, `,"title":`...)
	b = appendString(b, p.Title)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(p.Status), 10)
	b = append(b, `,"detail":`...)
	b = appendString(b, p.Detail)
	if len(p.Errors) > 0 {
		b = append(b, `,"errors":[`...)
		for i, f := range p.Errors {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"field":`...)
			b = appendString(b, f.Field)
			b = append(b, `,"message":`...)
			b = appendString(b, f.Message)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, "}\n"...)
}

// writeProblem writes p (headers and status already sent).
func writeProblem(w http.ResponseWriter, p api.Problem) error {
	buf := getBuf()
	b := appendProblem(buf.b, p)
	_, err := w.Write(b)
	buf.b = b
	putBuf(buf)
	return err
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string exactly as encoding/json does
// with SetEscapeHTML(false): '"' and '\\' escaped, \b \f \n \r \t by
// name, other control bytes as \u00XX, invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 as \u2028 and \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
