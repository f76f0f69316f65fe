package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/leasegate/leasegate"
)

// readBody reads a request body of at most limit bytes and checks its
// content type. An empty body gives nil. Errors are problems.
func readBody(c echo.Context, limit int64) ([]byte, error) {
	r := c.Request()
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	// Read one byte past the limit: a chunked body has no Content-Length
	// to check up front.
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, problem(leasegate.CodeMalformed, "could not read the request body")
	}
	if int64(len(body)) > limit {
		return nil, tooLarge(limit)
	}
	if len(body) == 0 {
		return nil, nil
	}
	ct := r.Header.Get(echo.HeaderContentType)
	mt, _, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil || mt != echo.MIMEApplicationJSON {
		return nil, problem(leasegate.CodeUnsupportedMedia,
			"a request body must have Content-Type: application/json")
	}
	return body, nil
}

// decodeObject parses body as one JSON object whose members are kept raw,
// so each field can be validated with its own rules. Unknown fields (not
// in allowed) are a 422 naming them; anything that is not a single JSON
// object is a 400. A nil body is an empty object.
func decodeObject(body []byte, allowed ...string) (map[string]json.RawMessage, error) {
	fields := map[string]json.RawMessage{}
	if body == nil {
		return fields, nil
	}
	if !utf8.Valid(body) {
		return nil, problem(leasegate.CodeMalformed, "request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return nil, malformed(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, problem(leasegate.CodeMalformed, "request body must be a JSON object")
	}
	var unknown []leasegate.FieldError
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, malformed(err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, problem(leasegate.CodeMalformed, "malformed JSON object")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, malformed(err)
		}
		if _, dup := fields[name]; dup {
			return nil, leasegate.Invalid(leasegate.FieldError{Field: name, Message: "given more than once"})
		}
		fields[name] = raw
		if !contains(allowed, name) {
			unknown = append(unknown, leasegate.FieldError{Field: name, Message: "unknown field"})
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, malformed(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, problem(leasegate.CodeMalformed, "unexpected data after the JSON object")
	}
	if len(unknown) > 0 {
		sort.Slice(unknown, func(i, j int) bool { return unknown[i].Field < unknown[j].Field })
		return nil, leasegate.Invalid(unknown...)
	}
	return fields, nil
}

func tooLarge(limit int64) *leasegate.Error {
	return problem(leasegate.CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than %d bytes", limit))
}

func malformed(err error) *leasegate.Error {
	return problem(leasegate.CodeMalformed, "malformed JSON: "+err.Error())
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

var intLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

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
	s := string(bytes.TrimSpace(raw))
	if !intLiteral.MatchString(s) {
		c.fail(field, fmt.Sprintf("must be a JSON integer from %d to %d", min, max))
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < min || n > max {
		c.fail(field, fmt.Sprintf("must be a JSON integer from %d to %d", min, max))
		return 0, true
	}
	return n, true
}

// stringField reads field as a JSON string. ok is true only when the field
// is present and a string; an absent required field or a non-string is
// recorded as a failure.
func (c *checker) stringField(fields map[string]json.RawMessage, field string, required bool) (v string, ok bool) {
	raw, present := fields[field]
	if !present {
		if required {
			c.fail(field, "is required")
		}
		return "", false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &v) != nil {
		c.fail(field, "must be a string")
		return "", false
	}
	return v, true
}

// owner validates an owner: trimmed, 1..255 bytes, no control characters.
func (c *checker) owner(field, raw string) string {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		c.fail(field, "must not be empty or whitespace")
	case len(s) > 255:
		c.fail(field, "must be at most 255 bytes")
	case !utf8.ValidString(s):
		c.fail(field, "must be valid UTF-8")
	case hasControl(s):
		c.fail(field, "must not contain control characters")
	}
	return s
}

// resource validates a lock's resource name (already percent-decoded).
func (c *checker) resource(s string) {
	switch {
	case s == "":
		c.fail("resource", "must not be empty")
	case len(s) > 255:
		c.fail("resource", "must be at most 255 bytes")
	case !utf8.ValidString(s):
		c.fail("resource", "must be valid UTF-8")
	case hasControl(s):
		c.fail("resource", "must not contain control characters")
	}
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
// parameters are still encoded.
func pathParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	return unescapePath(v)
}
