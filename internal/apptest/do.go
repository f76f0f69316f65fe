package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/api"
)

// Request builds a request. A non-empty body is sent as application/json
// unless hdr sets a Content-Type; hdr is name, value pairs.
func Request(method, target, body string, hdr ...string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req
}

// Do sends one request to h (an Echo app: e.ServeHTTP, so every
// middleware runs) and reads the answer.
func Do(t testing.TB, h http.Handler, method, target, body string, hdr ...string) *Answer {
	t.Helper()
	return Serve(h, Request(method, target, body, hdr...))
}

// Do sends one request to the app (see the function Do).
func (a *App) Do(t testing.TB, method, target, body string, hdr ...string) *Answer {
	t.Helper()
	return Do(t, a.E, method, target, body, hdr...)
}

// Serve sends req to h and reads the answer. It does not fail a test, so
// it may run in a goroutine of its own.
func Serve(h http.Handler, req *http.Request) *Answer {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	raw, _ := io.ReadAll(res.Body)
	res.Body = io.NopCloser(bytes.NewReader(raw))
	a := &Answer{Response: res, Raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &a.Object)
	}
	return a
}

// Answer is a response read whole: the *http.Response (its Body reads Raw
// again), Raw, and Object, the body as a JSON object (nil if it is not
// one).
type Answer struct {
	*http.Response
	Raw    []byte
	Object map[string]any
}

// Want fails the test now unless the status is status.
func (a *Answer) Want(t testing.TB, status int) *Answer {
	t.Helper()
	if a.StatusCode != status {
		t.Fatalf("got status %d (%s), want %d", a.StatusCode, a.Raw, status)
	}
	return a
}

// HeaderIs checks one response header.
func (a *Answer) HeaderIs(t testing.TB, name, want string) *Answer {
	t.Helper()
	if got := a.Header.Get(name); got != want {
		t.Errorf("got %s %q, want %q", name, got, want)
	}
	return a
}

// JSON checks status and the application/json content type, then decodes
// the body strictly (no unknown fields) into v.
func (a *Answer) JSON(t testing.TB, status int, v any) {
	t.Helper()
	a.decode(t, status, "application/json", v)
}

// decode checks status and contentType, then decodes the body strictly
// into v.
func (a *Answer) decode(t testing.TB, status int, contentType string, v any) {
	t.Helper()
	a.Want(t, status)
	a.HeaderIs(t, "Content-Type", contentType)
	dec := json.NewDecoder(bytes.NewReader(a.Raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decoding %s: %v", a.Raw, err)
	}
}

// Problem is an RFC 9457 problem as the gateway writes it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Problem asserts an RFC 9457 problem with status and slug, a title and
// a detail, decoded strictly, and returns it.
func (a *Answer) Problem(t testing.TB, status int, slug string) Problem {
	t.Helper()
	var p Problem
	a.decode(t, status, "application/problem+json", &p)
	if want := api.ProblemBase + slug; p.Type != want {
		t.Errorf("got type %q, want %q", p.Type, want)
	}
	if p.Status != status || p.Title == "" || p.Detail == "" {
		t.Errorf("got problem %+v, want status %d with a title and a detail", p, status)
	}
	return p
}

// Fields asserts a 422 validation problem naming exactly fields, each
// with a message.
func (a *Answer) Fields(t testing.TB, fields ...string) Problem {
	t.Helper()
	p := a.Problem(t, http.StatusUnprocessableEntity, "validation")
	var got []string
	for _, e := range p.Errors {
		if e.Message == "" {
			t.Errorf("field %q has no message", e.Field)
		}
		got = append(got, e.Field)
	}
	if strings.Join(got, ",") != strings.Join(fields, ",") {
		t.Errorf("got invalid fields %q, want %q", got, fields)
	}
	return p
}

// Slug checks only the problem type's last path segment, whatever the
// status (see Problem for the whole check).
func (a *Answer) Slug(t testing.TB, slug string) {
	t.Helper()
	typ, _ := a.Object["type"].(string)
	if !strings.HasSuffix(typ, "/"+slug) {
		t.Errorf("got problem type %q, want slug %q", typ, slug)
	}
}

// Map returns the body as a JSON object, failing the test now if it is
// not one.
func (a *Answer) Map(t testing.TB) map[string]any {
	t.Helper()
	if a.Object == nil {
		t.Fatalf("decode answer: got %q, want a JSON object", a.Raw)
	}
	return a.Object
}
