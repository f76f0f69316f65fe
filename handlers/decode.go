package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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

// Request bodies are split by go-json-experiment's jsontext (the module
// behind Go's encoding/json/v2): it checks the syntax, the nesting depth
// (10000, as encoding/json) and gives each member raw, so every field is
// validated with its own rules and one 422 names every bad field. It is
// not json.Unmarshal into a struct, because the contract asks for more
// than its options give:
//   - RejectUnknownMembers stops at the first unknown name; a 422 here
//     names all of them, and the duplicates with them;
//   - a UTF-16 surrogate escape without its partner ("\ud800") is a 400
//     there, or U+FFFD with AllowInvalidUTF8; here it is a 422 naming the
//     field (named as sent when it is a member name), so "\ud800" and
//     "\udfff" are never the same owner;
//   - ttl_seconds and the other integers take integer literals only
//     (parseIntLiteral): 60.0, 1e3, "3600" and null are a 422.
//
// So the decoder allows duplicate names (the top-level ones are a 422
// below; nested ones are part of a value kept as sent, as encoding/json
// accepts them) and invalid UTF-8 (the body is checked for UTF-8 first, so
// what is left is a lone surrogate, found by AppendUnquote). Names match
// exactly, case included. Decoders are pooled and read the body in place:
// an acquire body costs the map and the owner (BenchmarkDecodeAcquire).
var decodeOpts = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
}

type objectDecoder struct {
	in  bytes.Buffer
	dec jsontext.Decoder
}

var objectDecoders = sync.Pool{New: func() any { return new(objectDecoder) }}

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
	d := objectDecoders.Get().(*objectDecoder)
	d.in = *bytes.NewBuffer(body)
	d.dec.Reset(&d.in, decodeOpts...)
	fields, err := d.members(body, allowed)
	d.in = bytes.Buffer{} // the decoder keeps the body until its next use
	objectDecoders.Put(d)
	return fields, err
}

func (d *objectDecoder) members(body []byte, allowed []string) (map[string]json.RawMessage, error) {
	dec := &d.dec
	if dec.PeekKind() != '{' {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "request body must be a JSON object")
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, malformed(err)
	}
	var fields map[string]json.RawMessage
	var errs []leasegate.FieldError
	for dec.PeekKind() != '}' {
		rawName, err := dec.ReadValue()
		if err != nil {
			return nil, malformed(err)
		}
		name, known := memberName(rawName, allowed)
		v, err := dec.ReadValue()
		if err != nil {
			return nil, malformed(err)
		}
		end := int(dec.InputOffset())
		if fields == nil {
			fields = make(map[string]json.RawMessage, len(allowed))
		}
		switch _, dup := fields[name]; {
		case !known:
			if !dup {
				errs = append(errs, leasegate.FieldError{Field: name, Message: "unknown field"})
			}
		case dup:
			if !slices.ContainsFunc(errs, func(e leasegate.FieldError) bool { return e.Field == name }) {
				errs = append(errs, leasegate.FieldError{Field: name, Message: "given more than once"})
			}
		}
		fields[name] = body[end-len(v) : end : end]
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, malformed(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, leasegate.NewError(leasegate.CodeMalformed, "unexpected data after the JSON object")
	}
	if len(errs) > 0 {
		sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
		return nil, leasegate.Invalid(errs...)
	}
	return fields, nil
}

// malformed is the 400 for a syntax error the decoder reports.
func malformed(err error) *leasegate.Error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return leasegate.NewError(leasegate.CodeMalformed, "malformed JSON: "+err.Error())
	}
	if se.Err == io.ErrUnexpectedEOF {
		return leasegate.NewError(leasegate.CodeMalformed, "malformed JSON: the body ends inside the object")
	}
	return leasegate.NewError(leasegate.CodeMalformed, fmt.Sprintf("malformed JSON at byte %d: %v", se.ByteOffset, se.Err))
}

// memberName is the name of a member as the decoder read it (quoted), and
// whether it is one of allowed. A name holding a lone surrogate escape is
// never allowed and is named as sent, so that two different ones stay two.
func memberName(quoted []byte, allowed []string) (string, bool) {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		for _, a := range allowed {
			if string(raw) == a { // no allocation: the name is allowed's
				return a, true
			}
		}
		return string(raw), false
	}
	name, ok := unquote(quoted)
	if !ok {
		return string(raw), false
	}
	return name, slices.Contains(allowed, name)
}

// unquote is the text of a JSON string the decoder has read (quotes
// included). ok is false when it holds a UTF-16 surrogate escape without
// its partner (a high one not followed by a low one, or a low one alone):
// encoding/json would make that U+FFFD, so "\ud800" and "\udfff" would be
// the same string. A valid pair ("\ud83d\ude00") is one character.
func unquote(quoted []byte) (string, bool) {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw), true
	}
	var buf [128]byte
	// The decoder has checked the syntax and the body is UTF-8: the only
	// error left is a lone surrogate.
	b, err := jsontext.AppendUnquote(buf[:0], quoted)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// TooLarge is the problem of a request body over limit bytes.
func TooLarge(limit int64) *leasegate.Error {
	return leasegate.NewError(leasegate.CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than %d bytes", limit))
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
	if v, ok = unquote(raw); !ok {
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

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// checkedParam is path parameter name (pathParam), held to check when
// its encoding is good.
func checkedParam(c echo.Context, ck *checker, name string, check func(field, v string)) string {
	v, ok := pathParam(c, ck, name)
	if ok {
		check(name, v)
	}
	return v
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
