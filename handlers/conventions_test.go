package handlers_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/leasegate/leasegate/internal/apptest"
)

func TestUnknownFieldsAreNamed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	p := h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-a","ttl_seconds":30,"ttl":5,"color":"red"}`).Fields(t, "color", "ttl")
	if p.Detail == "" {
		t.Errorf("got no detail")
	}
	h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":0}`).Fields(t, "wait_ms")
	h.Do(t, http.MethodDelete, "/locks/r", `{"owner":"svc-a","ttl_seconds":30}`).Fields(t, "ttl_seconds")
	h.Do(t, http.MethodDelete, "/locks/r?owner=svc-a&force=1", "").Fields(t, "force")
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestDuplicateJSONKeysAreRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-a","ttl_seconds":30,"owner":"svc-b"}`).Fields(t, "owner")
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestMalformedBodiesAreBadRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, body := range map[string]string{
		"broken JSON":                   `{"owner":"svc-a",`,
		"a trailing comma":              `{"owner":"svc-a","ttl_seconds":30,}`,
		"trailing garbage":              `{"owner":"svc-a","ttl_seconds":30} x`,
		"a second object":               `{"owner":"svc-a","ttl_seconds":30}{}`,
		"an array":                      `[{"owner":"svc-a","ttl_seconds":30}]`,
		"a string":                      `"owner"`,
		"null":                          `null`,
		"invalid UTF-8":                 "{\"owner\":\"svc-\xff\",\"ttl_seconds\":30}",
		"single quotes":                 `{'owner':'svc-a'}`,
		"a comment":                     `{"owner":"svc-a" /* x */,"ttl_seconds":30}`,
		"an unterminated string":        `{"owner":"svc-a`,
		"an object key that is no name": `{1:2}`,
	} {
		t.Run(name, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/r", body).Problem(t, http.StatusBadRequest, "malformed-request")
		})
	}
	t.Run("trailing whitespace is fine", func(t *testing.T) {
		res := h.Do(t, http.MethodPost, "/locks/ws", "{\"owner\":\"svc-a\",\"ttl_seconds\":30}\n\t ")
		if res.StatusCode != http.StatusOK {
			t.Errorf("got %d, want 200", res.StatusCode)
		}
	})
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestBodiesOverTheLimitAreTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	big := `{"owner":"svc-a","ttl_seconds":30,"pad":"` + strings.Repeat("x", 16<<10) + `"}`
	t.Run("with a Content-Length", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/r", big).Problem(t, http.StatusRequestEntityTooLarge, "payload-too-large")
	})
	t.Run("chunked, with no Content-Length", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, "/locks/r", io.NopCloser(strings.NewReader(big)))
		req.ContentLength = -1
		req.Header.Set("Content-Type", "application/json")
		apptest.Serve(h.E, req).Problem(t, http.StatusRequestEntityTooLarge, "payload-too-large")
	})
	t.Run("exactly at the limit is read", func(t *testing.T) {
		body := `{"owner":"svc-a","ttl_seconds":30}`
		body += strings.Repeat(" ", 16<<10-len(body))
		res := h.Do(t, http.MethodPost, "/locks/limit", body)
		if res.StatusCode != http.StatusOK {
			t.Errorf("got %d for a body of exactly 16 KiB, want 200", res.StatusCode)
		}
	})
	h.Do(t, http.MethodDelete, "/locks/r", big).Problem(t, http.StatusRequestEntityTooLarge, "payload-too-large")
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
}

func TestAnUnreadableBodyIsABadRequest(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	req := httptest.NewRequest(http.MethodPost, "/locks/r", iotest.ErrReader(io.ErrUnexpectedEOF))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	apptest.Serve(h.E, req).Problem(t, http.StatusBadRequest, "malformed-request")
}

func TestNonJSONContentTypesAreUnsupported(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	body := `{"owner":"svc-a","ttl_seconds":30}`
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/jsonp", "", "application/json;;"} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			h.Do(t, http.MethodPost, "/locks/r", body, "Content-Type", ct).Problem(t, http.StatusUnsupportedMediaType, "unsupported-media-type")
		})
	}
	h.Do(t, http.MethodDelete, "/locks/r", `{"owner":"svc-a"}`, "Content-Type", "text/plain").Problem(t, http.StatusUnsupportedMediaType, "unsupported-media-type")
	if got := h.status(t, "r"); got != nil {
		t.Errorf("got %+v, want nothing written", got)
	}
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		t.Run("Content-Type "+ct+" is JSON", func(t *testing.T) {
			res := h.Do(t, http.MethodPost, "/locks/ct", body, "Content-Type", ct)
			if res.StatusCode != http.StatusOK {
				t.Errorf("got %d, want 200", res.StatusCode)
			}
		})
	}
}

func TestResourceNamesMustBeCleanUTF8(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for name, path := range map[string]string{
		"invalid UTF-8":               "/locks/%FF",
		"a truncated rune":            "/locks/%C3",
		"a newline":                   "/locks/a%0Ab",
		"a NUL":                       "/locks/a%00b",
		"DEL":                         "/locks/a%7Fb",
		"an escape (ANSI)":            "/locks/%1B%5B31m",
		"a C1 control (U+0085)":       "/locks/a%C2%85b",
		"a tab":                       "/locks/a%09b",
		"two encoded slashes (valid)": "/locks/%2F%2F",
	} {
		t.Run(name, func(t *testing.T) {
			if name == "two encoded slashes (valid)" {
				// "//" is a non-empty resource; not every odd name is bad.
				if res := h.Do(t, http.MethodGet, path, ""); res.StatusCode != http.StatusNotFound {
					t.Errorf("got %d for resource //, want 404 (valid name, no lock)", res.StatusCode)
				}
				return
			}
			h.Do(t, http.MethodPost, path, `{"owner":"svc-a","ttl_seconds":30}`).Fields(t, "resource")
			h.Do(t, http.MethodGet, path, "").Fields(t, "resource")
		})
	}
	keys, _ := h.Backend.RDB.Keys(context.Background(), "*").Result()
	if len(keys) != 0 {
		t.Errorf("got keys %q, want nothing written", keys)
	}
}

func TestEncodedSlashesAreOneResource(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	lk := h.acquire(t, "team%2Fjob", "svc-a", 30)
	if lk.Resource != "team/job" {
		t.Errorf("got resource %q, want team/job", lk.Resource)
	}
	if got := h.status(t, "team%2Fjob"); got == nil || *got != lk {
		t.Errorf("got %+v, want %+v", got, lk)
	}
	res := h.Do(t, http.MethodPost, "/locks/team%2Fjob/renew", `{"owner":"svc-a","ttl_seconds":60}`)
	var renewed heldJSON
	res.JSON(t, http.StatusOK, &renewed)
	if renewed.Lock.Token != lk.Token || renewed.Lock.Resource != "team/job" {
		t.Errorf("got %+v, want token %d on team/job", renewed.Lock, lk.Token)
	}
	h.Do(t, http.MethodGet, "/locks/team/job", "").Problem(t, http.StatusNotFound, "not-found")
	if res := h.Do(t, http.MethodDelete, "/locks/team%2Fjob?owner=svc-a", ""); res.StatusCode != http.StatusNoContent {
		t.Errorf("got %d, want 204", res.StatusCode)
	}
	t.Run("an encoded percent sign next to an encoded slash is decoded once", func(t *testing.T) {
		if lk := h.acquire(t, "50%25%2Fdone", "svc-a", 30); lk.Resource != "50%/done" {
			t.Errorf("got %q, want 50%%/done", lk.Resource)
		}
	})
}

func TestReleaseOwnerInBodyOrQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, target, body string
		status             int
		fields             []string
	}{
		{"owner in the body", "/locks/r", `{"owner":"svc-a"}`, http.StatusNoContent, nil},
		{"owner in the query", "/locks/r?owner=svc-a", "", http.StatusNoContent, nil},
		{"the same owner in both", "/locks/r?owner=svc-a", `{"owner":"svc-a"}`, http.StatusNoContent, nil},
		{"different owners in body and query", "/locks/r?owner=svc-b", `{"owner":"svc-a"}`, http.StatusUnprocessableEntity, []string{"owner"}},
		{"the owner twice in the query", "/locks/r?owner=svc-a&owner=svc-a", "", http.StatusUnprocessableEntity, []string{"owner"}},
		{"no owner anywhere", "/locks/r", "", http.StatusUnprocessableEntity, []string{"owner"}},
		{"a non-string owner in the body", "/locks/r", `{"owner":7}`, http.StatusUnprocessableEntity, []string{"owner"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			held := h.acquire(t, "r", "svc-a", 30)
			res := h.Do(t, http.MethodDelete, tc.target, tc.body)
			if tc.fields != nil {
				res.Fields(t, tc.fields...)
			} else if res.StatusCode != tc.status {
				t.Fatalf("got %d, want %d", res.StatusCode, tc.status)
			}
			got := h.status(t, "r")
			if tc.status == http.StatusNoContent {
				if got != nil {
					t.Errorf("got %+v after release, want gone", got)
				}
				if b, _ := io.ReadAll(res.Body); len(b) != 0 {
					t.Errorf("got body %q on 204, want none", b)
				}
			} else if got == nil || *got != held {
				t.Errorf("got %+v after a rejected release, want unchanged %+v", got, held)
			}
		})
	}
	t.Run("releasing a lock that is not there is not found", func(t *testing.T) {
		h := newHarness(t)
		h.Do(t, http.MethodDelete, "/locks/none?owner=svc-a", "").Problem(t, http.StatusNotFound, "not-found")
	})
}

func TestReleaseAndRenewWithAToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "r", "svc-a", 30)
	tok := itoa(int(held.Token))
	wrong := itoa(int(held.Token) + 1)

	for _, tc := range []struct {
		name, target, body string
		status             int
		slug               string
		fields             []string
	}{
		{"a wrong token in the query", "/locks/r?owner=svc-a&token=" + wrong, "", 403, "forbidden", nil},
		{"a wrong token in the body", "/locks/r", `{"owner":"svc-a","token":` + wrong + `}`, 403, "forbidden", nil},
		{"tokens that disagree", "/locks/r?token=" + tok, `{"owner":"svc-a","token":` + wrong + `}`, 422, "", []string{"token"}},
		{"a non-numeric token", "/locks/r?owner=svc-a&token=abc", "", 422, "", []string{"token"}},
		{"a zero token", "/locks/r?owner=svc-a&token=0", "", 422, "", []string{"token"}},
		{"a signed token", "/locks/r?owner=svc-a&token=%2B" + tok, "", 422, "", []string{"token"}},
		{"a string token in the body", "/locks/r", `{"owner":"svc-a","token":"` + tok + `"}`, 422, "", []string{"token"}},
		{"the token twice in the query", "/locks/r?owner=svc-a&token=" + tok + "&token=" + tok, "", 422, "", []string{"token"}},
	} {
		t.Run("release with "+tc.name, func(t *testing.T) {
			res := h.Do(t, http.MethodDelete, tc.target, tc.body)
			if tc.fields != nil {
				res.Fields(t, tc.fields...)
			} else {
				res.Problem(t, tc.status, tc.slug)
			}
			if got := h.status(t, "r"); got == nil || *got != held {
				t.Errorf("got %+v, want unchanged %+v", got, held)
			}
		})
	}

	t.Run("renew with a wrong token is forbidden", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":60,"token":`+wrong+`}`).Problem(t, 403, "forbidden")
	})
	t.Run("renew with the right token keeps it and moves expires_at", func(t *testing.T) {
		res := h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":60,"token":`+tok+`}`)
		var got heldJSON
		res.JSON(t, http.StatusOK, &got)
		if got.Lock.Token != held.Token || got.Lock.ExpiresAt != "2026-11-30T09:31:00.000Z" {
			t.Errorf("got %+v, want token %d and expires_at 09:31:00.000Z", got.Lock, held.Token)
		}
	})
	t.Run("release with the right token in the query", func(t *testing.T) {
		if res := h.Do(t, http.MethodDelete, "/locks/r?owner=svc-a&token="+tok, ""); res.StatusCode != http.StatusNoContent {
			t.Errorf("got %d, want 204", res.StatusCode)
		}
	})
	t.Run("release with the right token in the body", func(t *testing.T) {
		lk := h.acquire(t, "r", "svc-a", 30)
		if res := h.Do(t, http.MethodDelete, "/locks/r", `{"owner":"svc-a","token":`+itoa(int(lk.Token))+`}`); res.StatusCode != http.StatusNoContent {
			t.Errorf("got %d, want 204", res.StatusCode)
		}
	})
}

func TestRenewAnswers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Do(t, http.MethodPost, "/locks/none/renew", `{"owner":"svc-a","ttl_seconds":60}`).Problem(t, http.StatusNotFound, "not-found")
	held := h.acquire(t, "r", "svc-a", 30)
	h.Backend.Advance(t, 5*1e9)
	var got heldJSON
	h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":60}`).JSON(t, http.StatusOK, &got)
	want := held
	want.ExpiresAt = "2026-11-30T09:31:05.000Z"
	if got.Lock != want {
		t.Errorf("got %+v, want %+v", got.Lock, want)
	}
	h.Backend.Advance(t, 60*1e9)
	h.Do(t, http.MethodPost, "/locks/r/renew", `{"owner":"svc-a","ttl_seconds":60}`).Problem(t, http.StatusNotFound, "not-found")
}

func TestContendedAcquireIsNotAnError(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.acquire(t, "r", "svc-a", 30)
	h.Backend.Advance(t, 10500*1e6)
	var got acquireJSON
	h.Do(t, http.MethodPost, "/locks/r", `{"owner":"svc-b","ttl_seconds":30}`).JSON(t, http.StatusOK, &got)
	if got.Acquired || got.Lock != nil || got.Resource != "r" || got.RetryAfterMS == nil || *got.RetryAfterMS != 19500 {
		t.Errorf("got %+v, want acquired false, resource r, retry_after_ms 19500 and no lock", got)
	}
}

func TestAcquireAnswerShape(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	lk := h.acquire(t, "shape", "svc-a", 30)
	want := lockJSON{Resource: "shape", Owner: "svc-a", Token: epochMicros,
		AcquiredAt: "2026-11-30T09:30:00.000Z", ExpiresAt: "2026-11-30T09:30:30.000Z"}
	if lk != want {
		t.Errorf("got %+v, want %+v", lk, want)
	}
	h.Backend.Advance(t, 1234*1e6)
	res := h.Do(t, http.MethodGet, "/locks/shape", "")
	var held heldJSON
	res.JSON(t, http.StatusOK, &held)
	if held.Lock != want {
		t.Errorf("got status %+v, want %+v", held.Lock, want)
	}
	t.Run("wait_ms within bounds is accepted and out of bounds rejected", func(t *testing.T) {
		h.Do(t, http.MethodPost, "/locks/w", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":-1}`).Fields(t, "wait_ms")
		h.Do(t, http.MethodPost, "/locks/w", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":30001}`).Fields(t, "wait_ms")
		h.Do(t, http.MethodPost, "/locks/w", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":1.5}`).Fields(t, "wait_ms")
		if res := h.Do(t, http.MethodPost, "/locks/w", `{"owner":"svc-a","ttl_seconds":30,"wait_ms":0}`); res.StatusCode != http.StatusOK {
			t.Errorf("got %d for wait_ms 0, want 200", res.StatusCode)
		}
	})
}

var epochMicros = epoch.UnixMicro()

func TestRoutes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	t.Run("an unknown route is a 404 problem", func(t *testing.T) {
		// GET /locks is the operators' listing (operator_test.go).
		for _, path := range []string{"/nope", "/locks/", "/locks/a/b", "/locks/a/renew/x"} {
			h.Do(t, http.MethodGet, path, "").Problem(t, http.StatusNotFound, "not-found")
		}
	})
	t.Run("a wrong method is a 405 problem with Allow", func(t *testing.T) {
		for path, allow := range map[string]string{
			"/locks/a":       "OPTIONS, DELETE, GET, POST",
			"/locks/a/renew": "OPTIONS, POST",
			"/healthz":       "OPTIONS, GET",
		} {
			for _, method := range []string{http.MethodPut, http.MethodPatch, http.MethodHead} {
				res := h.Do(t, method, path, "")
				if got := res.Header.Get("Allow"); got != allow {
					t.Errorf("%s %s: got Allow %q, want %q", method, path, got, allow)
				}
				if method == http.MethodHead {
					if res.StatusCode != http.StatusMethodNotAllowed {
						t.Errorf("HEAD %s: got %d, want 405", path, res.StatusCode)
					}
					continue
				}
				res.Problem(t, http.StatusMethodNotAllowed, "malformed-request")
			}
		}
	})
	t.Run("OPTIONS is answered by the router with Allow", func(t *testing.T) {
		res := h.Do(t, http.MethodOptions, "/locks/a", "")
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Allow") != "OPTIONS, DELETE, GET, POST" {
			t.Errorf("got %d Allow %q, want 204 and the route's methods", res.StatusCode, res.Header.Get("Allow"))
		}
	})
	t.Run("healthz and readyz answer ok", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			var got map[string]string
			h.Do(t, http.MethodGet, path, "").JSON(t, http.StatusOK, &got)
			if got["status"] != "ok" {
				t.Errorf("%s: got %v, want status ok", path, got)
			}
		}
	})
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	res := h.Do(t, http.MethodGet, "/healthz", "", "X-Request-Id", "trace-42.a:b_c")
	if got := res.Header.Get("X-Request-Id"); got != "trace-42.a:b_c" {
		t.Errorf("got X-Request-Id %q, want the caller's plain id echoed", got)
	}
	for _, bad := range []string{"a b", "a\nb", strings.Repeat("a", 65), "ü", `"quoted"`} {
		res := h.Do(t, http.MethodGet, "/healthz", "", "X-Request-Id", bad)
		got := res.Header.Get("X-Request-Id")
		if got == bad || len(got) != 24 {
			t.Errorf("X-Request-Id %q: got %q, want a fresh 24-hex-digit id", bad, got)
		}
	}
	if got := h.Do(t, http.MethodGet, "/healthz", "").Header.Get("X-Request-Id"); len(got) != 24 {
		t.Errorf("got X-Request-Id %q, want a fresh id when none is sent", got)
	}
}

// A query string that does not parse must not lose parameters silently: a
// release with a garbled token would otherwise release unconditionally.
func TestAMalformedReleaseQueryIsRejected(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	held := h.acquire(t, "r", "svc-a", 30)
	for _, target := range []string{
		"/locks/r?owner=svc-a&token=%ZZ",
		"/locks/r?owner=svc-a&token%ZZ=1",
		"/locks/r?owner=svc-a;token=1",
		"/locks/r?owner=%E0%A4%A",
	} {
		t.Run(target, func(t *testing.T) {
			h.Do(t, http.MethodDelete, target, "").Problem(t, http.StatusBadRequest, "malformed-request")
			if got := h.status(t, "r"); got == nil || *got != held {
				t.Errorf("got %+v, want the lock untouched %+v", got, held)
			}
		})
	}
}
