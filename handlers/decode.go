package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/leasegate/leasegate"
)

// readBody reads a request body of at most limit bytes and checks its
// content type. An empty body gives nil. Errors are problems.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > limit {
		return nil, TooLarge(limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	// Read one byte past the limit: a chunked body has no Content-Length
	// to check up front.
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "could not read the request body")
	}
	if int64(len(body)) > limit {
		return nil, TooLarge(limit)
	}
	if len(body) == 0 {
		return nil, nil
	}
	ct := r.Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != echo.MIMEApplicationJSON {
		return nil, leasegate.NewError(leasegate.CodeUnsupportedMedia,
			"a request body must have Content-Type: application/json")
	}
	return body, nil
}

// Request bodies are checked and split by the hand-written scanner below,
// not by encoding/json. Go 1.26's encoding/json (a Decoder with
// DisallowUnknownFields and UseNumber into a struct, integers as a type
// with UnmarshalJSON over the raw bytes) cannot give the contract's strict
// input, whatever the options:
//   - a member given twice decodes silently, the last one winning; nothing
//     refuses duplicates (encoding/json/v2 does, behind GOEXPERIMENT=jsonv2);
//   - member names match case-insensitively: {"OWNER": "a"} fills owner,
//     even with DisallowUnknownFields;
//   - DisallowUnknownFields stops at the first unknown name and gives it only
//     inside an error string; a 422 here names every one;
//   - a UTF-16 surrogate escape without its partner ("\ud800") decodes to
//     U+FFFD without an error, so "\ud800" and "\udfff" would be the same
//     owner; refusing it needs the raw string, i.e. a scanner anyway;
//   - an UnmarshalJSON error ends decoding and carries no field name.
// It is also on every request's path and reflects nothing: an acquire body
// costs 3 allocations here, 12 with the struct decode and 49 with the
// json.Decoder.Token walk it replaced (BenchmarkDecodeAcquire).

// maxDepth bounds nesting, the body's own object included, as
// encoding/json does.
const maxDepth = 10000

// decodeObject checks that body is one JSON object and splits it into its
// members, kept raw, so each field is validated with its own rules.
// Unknown names (not in allowed) and names given twice are a 422 naming
// them; anything that is not a single well-formed JSON object is a 400. A
// nil body is an empty object.
func decodeObject(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	if body == nil {
		return nil, nil
	}
	if !utf8.Valid(body) {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "request body is not valid UTF-8")
	}
	s := scanner{b: body}
	s.space()
	if !s.next('{') {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "request body must be a JSON object")
	}
	var fields map[string]json.RawMessage
	var errs []leasegate.FieldError
	s.space()
	if !s.next('}') {
		for {
			s.space()
			if s.peek() != '"' {
				return nil, s.fail("a member name")
			}
			rawName, escaped, err := s.str()
			if err != nil {
				return nil, err
			}
			s.space()
			if !s.next(':') {
				return nil, s.fail("':'")
			}
			s.space()
			start := s.i
			if err := s.value(); err != nil {
				return nil, err
			}
			name, known := memberName(rawName, escaped, allowed)
			if fields == nil {
				fields = make(map[string]json.RawMessage, len(allowed))
			}
			switch _, dup := fields[name]; {
			case !known:
				if !dup {
					errs = append(errs, leasegate.FieldError{Field: name, Message: "unknown field"})
				}
			case dup:
				if !named(errs, name) {
					errs = append(errs, leasegate.FieldError{Field: name, Message: "given more than once"})
				}
			}
			fields[name] = body[start:s.i:s.i]
			s.space()
			if s.next(',') {
				continue
			}
			if s.next('}') {
				break
			}
			return nil, s.fail("',' or '}'")
		}
	}
	s.space()
	if s.i != len(body) {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "unexpected data after the JSON object")
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
		return nil, leasegate.Invalid(errs...)
	}
	return fields, nil
}

// memberName is the name of a member as the scanner found it (between the
// quotes), and whether it is one of allowed. A name holding a lone
// surrogate escape is never allowed and is named as sent, so that two
// different ones stay two.
func memberName(raw []byte, escaped bool, allowed []string) (string, bool) {
	name := ""
	if escaped {
		s, ok := unquote(raw)
		if !ok {
			return string(raw), false
		}
		name = s
	}
	for _, a := range allowed {
		if escaped && name == a || !escaped && string(raw) == a {
			return a, true
		}
	}
	if !escaped {
		name = string(raw)
	}
	return name, false
}

func named(errs []leasegate.FieldError, field string) bool {
	for _, e := range errs {
		if e.Field == field {
			return true
		}
	}
	return false
}

// scanner checks JSON syntax (RFC 8259, as encoding/json accepts it) over
// a UTF-8 body; i is the next byte to read.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// next consumes c if it is the next byte.
func (s *scanner) next(c byte) bool {
	if s.peek() == c && s.i < len(s.b) {
		s.i++
		return true
	}
	return false
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// fail is the 400 for a body that has something else where want belongs.
func (s *scanner) fail(want string) *leasegate.Error {
	if s.i >= len(s.b) {
		return leasegate.NewError(leasegate.CodeMalformed, "malformed JSON: the body ends where "+want+" belongs")
	}
	r, _ := utf8.DecodeRune(s.b[s.i:])
	return leasegate.NewError(leasegate.CodeMalformed,
		fmt.Sprintf("malformed JSON: %q at byte %d where %s belongs", r, s.i, want))
}

// str reads a string from its opening quote and returns what is between
// the quotes, and whether that holds an escape.
func (s *scanner) str() (raw []byte, escaped bool, err *leasegate.Error) {
	s.i++
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				if _, ok := hex4(s.b[s.i:]); !ok {
					return nil, false, s.fail("four hex digits")
				}
				s.i += 4
			default:
				return nil, false, s.fail("an escape")
			}
		case c < 0x20:
			return nil, false, s.fail("a string character (control characters must be escaped)")
		default:
			s.i++
		}
	}
	return nil, false, s.fail("the end of a string")
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number() *leasegate.Error {
	s.next('-')
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return s.fail("a digit")
	}
	if s.next('.') && s.digits() == 0 {
		return s.fail("a digit")
	}
	if s.next('e') || s.next('E') {
		if !s.next('+') {
			s.next('-')
		}
		if s.digits() == 0 {
			return s.fail("a digit")
		}
	}
	return nil
}

// value reads one JSON value of any kind. Objects and arrays are only
// checked, with an explicit stack, so deep nesting costs no recursion.
func (s *scanner) value() *leasegate.Error {
	var open []byte // containers open inside this value, innermost last
	for {
		s.space()
		switch c := s.peek(); c {
		case '"':
			if _, _, err := s.str(); err != nil {
				return err
			}
		case 't', 'f', 'n':
			lit := "null"
			switch c {
			case 't':
				lit = "true"
			case 'f':
				lit = "false"
			}
			if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
				return s.fail(lit)
			}
			s.i += len(lit)
		case '{', '[':
			if 1+len(open)+1 > maxDepth { // the body, what is open, this one
				return s.fail("less nesting")
			}
			s.i++
			s.space()
			if s.next(closer(c)) {
				break
			}
			open = append(open, c)
			if c == '{' {
				if err := s.memberKey(); err != nil {
					return err
				}
			}
			continue
		default:
			if c != '-' && (c < '0' || c > '9') {
				return s.fail("a value")
			}
			if err := s.number(); err != nil {
				return err
			}
		}
		// A value is complete: close what it completes, then go on with
		// the next element of the innermost open container.
		for {
			if len(open) == 0 {
				return nil
			}
			top := open[len(open)-1]
			s.space()
			if s.next(closer(top)) {
				open = open[:len(open)-1]
				continue
			}
			if !s.next(',') {
				return s.fail("',' or '" + string(closer(top)) + "'")
			}
			if top == '{' {
				if err := s.memberKey(); err != nil {
					return err
				}
			}
			break
		}
	}
}

// memberKey reads `"name":` inside a nested object.
func (s *scanner) memberKey() *leasegate.Error {
	s.space()
	if s.peek() != '"' {
		return s.fail("a member name")
	}
	if _, _, err := s.str(); err != nil {
		return err
	}
	s.space()
	if !s.next(':') {
		return s.fail("':'")
	}
	return nil
}

func closer(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unquote decodes what is between the quotes of a string the scanner has
// checked. ok is false when it holds a UTF-16 surrogate escape without its
// partner (a high one not followed by a low one, or a low one alone):
// encoding/json would make that U+FFFD, so "\ud800" and "\udfff" would be
// the same string. A valid pair ("\ud83d\ude00") is one character.
func unquote(raw []byte) (string, bool) {
	i := bytes.IndexByte(raw, '\\')
	if i < 0 {
		return string(raw), true
	}
	var b strings.Builder
	b.Grow(len(raw))
	b.Write(raw[:i])
	for i < len(raw) {
		if raw[i] != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw) - i
			}
			b.Write(raw[i : i+j])
			i += j
			continue
		}
		if i+1 >= len(raw) {
			return "", false
		}
		switch c := raw[i+1]; c {
		case '"', '\\', '/':
			b.WriteByte(c)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(raw[i+2:])
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				lo, ok := rune(0), false
				if r < 0xdc00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					lo, ok = hex4(raw[i+8:])
				}
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return "", false
				}
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			b.WriteRune(r)
			i += 4
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}

// TooLarge is the problem of a request body over limit bytes.
func TooLarge(limit int64) *leasegate.Error {
	return leasegate.NewError(leasegate.CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than %d bytes", limit))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// checker collects field errors so one answer names every bad field.
type checker struct {
	errs []leasegate.FieldError
}

func (c *checker) fail(field, msg string) {
	c.errs = append(c.errs, leasegate.FieldError{Field: field, Message: msg})
}

func (c *checker) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return leasegate.Invalid(c.errs...)
}

// isIntLiteral reports whether s is a JSON integer literal,
// -?(0|[1-9][0-9]*), also in query strings and forms.
func isIntLiteral[T string | []byte](s T) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseIntLiteral is the value of a JSON integer literal; ok is false for
// anything else (60.0, 1e3, "3600", null) and on overflow.
func parseIntLiteral(raw []byte) (n int64, ok bool) {
	if !isIntLiteral(raw) {
		return 0, false
	}
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	var u uint64
	for _, c := range raw {
		if u > (1<<63)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -int64(u), true // -(1<<63) wraps to itself: MinInt64
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// intField reads field as a JSON integer literal in [min, max]. present is
// false when the field is absent. A fraction, exponent, string or null is
// rejected: 60.0 and 1e3 are not integer literals.
func (c *checker) intField(fields map[string]json.RawMessage, field string, min, max int64, required bool) (v int64, present bool) {
	raw, ok := fields[field]
	if !ok {
		if required {
			c.fail(field, "is required")
		}
		return 0, false
	}
	n, ok := parseIntLiteral(raw)
	if !ok || n < min || n > max {
		c.fail(field, fmt.Sprintf("must be a JSON integer from %d to %d", min, max))
		return 0, true
	}
	return n, true
}

// stringField reads field as a JSON string. ok is true only when the field
// is present and a string; an absent required field, a non-string or a
// string with a lone surrogate escape is recorded as a failure.
func (c *checker) stringField(fields map[string]json.RawMessage, field string, required bool) (v string, ok bool) {
	raw, present := fields[field]
	if !present {
		if required {
			c.fail(field, "is required")
		}
		return "", false
	}
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		c.fail(field, "must be a string")
		return "", false
	}
	// decodeObject has checked the string: unquote can only refuse a
	// lone surrogate.
	if v, ok = unquote(raw[1 : len(raw)-1]); !ok {
		c.fail(field, `must not contain a lone UTF-16 surrogate escape (\ud800 to \udfff without its pair)`)
		return "", false
	}
	return v, true
}

// owner validates an owner: trimmed, 1..255 bytes, no control characters.
func (c *checker) owner(field, raw string) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		c.fail(field, "must not be empty or whitespace")
		return s
	}
	c.text(field, s, 255)
	return s
}

// resource validates a lock's resource name (already percent-decoded),
// naming field in the errors: a semaphore's or a claim key's name follows
// the same rules.
func (c *checker) resource(field, s string) {
	if s == "" {
		c.fail(field, "must not be empty")
		return
	}
	c.text(field, s, 255)
}

// text checks what every free-text value must be: at most limit bytes
// of valid UTF-8 without control characters. It records the first rule s
// breaks, and reports whether s keeps them all.
func (c *checker) text(field, s string, limit int) bool {
	switch {
	case len(s) > limit:
		c.fail(field, "must be at most "+strconv.Itoa(limit)+" bytes")
	case !utf8.ValidString(s):
		c.fail(field, "must be valid UTF-8")
	case hasControl(s):
		c.fail(field, "must not contain control characters")
	default:
		return true
	}
	return false
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// pathParam returns a path parameter percent-decoded. Echo routes on the
// raw path when the URL has one (e.g. an encoded '/'), and then its
// parameters are still encoded. A bad encoding is recorded against name,
// and ok is false.
func pathParam(c echo.Context, ck *checker, name string) (v string, ok bool) {
	v = c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, true
	}
	v, err := url.PathUnescape(v)
	if err != nil {
		ck.fail(name, "bad percent-encoding")
		return "", false
	}
	return v, true
}
