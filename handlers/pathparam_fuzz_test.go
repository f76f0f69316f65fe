package handlers_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/keyspace"
)

// The path parameters {resource}, {name} and {user_id} are fuzzed through
// the real router and handlers, with services that record what they were
// asked for. The seed corpora are in testdata/fuzz/<FuzzName>/.

// recorder is a LockService, UserLockService and FlagRegistry that
// records the names it is called with and finds nothing.
type recorder struct {
	mu       sync.Mutex
	resource *string
	name     *string
	user     *string
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resource, r.name, r.user = nil, nil, nil
}

func (r *recorder) got() (resource, name, user *string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resource, r.name, r.user
}

func (r *recorder) Acquire(context.Context, string, leasegate.AcquireRequest) (leasegate.AcquireResult, error) {
	return leasegate.AcquireResult{}, leasegate.ErrLockNotHeld
}

func (r *recorder) Status(_ context.Context, _ string, resource string) (leasegate.Lock, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resource = &resource
	return leasegate.Lock{}, leasegate.ErrLockNotHeld
}

func (r *recorder) Renew(context.Context, string, string, string, int64, time.Duration) (leasegate.Lock, error) {
	return leasegate.Lock{}, leasegate.ErrLockNotHeld
}

func (r *recorder) Release(context.Context, string, string, string, int64) (leasegate.ReleaseResult, error) {
	return leasegate.NotFound, nil
}

func (r *recorder) Attempt(context.Context, string, string, string, time.Duration, leasegate.RequestMeta) (leasegate.UserLockResult, error) {
	return leasegate.UserLockResult{}, leasegate.ErrUserNotFound
}

func (r *recorder) Clear(_ context.Context, _ string, name, userID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.name, r.user = &name, &userID
	return leasegate.ErrUserNotFound
}

func (r *recorder) List(context.Context, string, leasegate.FlagQuery) (leasegate.FlagPage, error) {
	return leasegate.FlagPage{}, nil
}

func (r *recorder) Get(_ context.Context, _ string, userID string) (leasegate.UserFlags, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user = &userID
	return leasegate.UserFlags{}, leasegate.ErrUserNotFound
}

func (r *recorder) ClearFlags(context.Context, string, string, leasegate.RequestMeta) error {
	return leasegate.ErrUserNotFound
}

func (r *recorder) BanUser(context.Context, string, string, time.Duration, string, leasegate.RequestMeta) (leasegate.Ban, error) {
	return leasegate.Ban{}, leasegate.ErrUserNotFound
}

func (r *recorder) Unban(context.Context, string, string, leasegate.RequestMeta) error {
	return leasegate.ErrUserNotFound
}

func newRecordingGateway() (*echo.Echo, *recorder) {
	rec := &recorder{}
	return handlers.New(handlers.DefaultConfig(), handlers.Deps{Locks: rec, UserLocks: rec, Flags: rec}), rec
}

// serveRaw sends "METHOD target HTTP/1.1" as net/http's server reads it;
// ok is false when net/http would refuse the request line itself (it
// answers 400 before any handler runs).
func serveRaw(e *echo.Echo, method, target string) (status int, ok bool) {
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(method + " " + target + " HTTP/1.1\r\nHost: gw\r\n\r\n")))
	if err != nil {
		return 0, false
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec.Code, true
}

// Independent restatements of the documented rules (api/openapi.yaml).
func validResource(s string) bool {
	return s != "" && len(s) <= 255 && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl)
}

func validUserID(s string) bool {
	return s != "" && len(s) <= 128 && utf8.ValidString(s) && !strings.ContainsFunc(s, unicode.IsControl) && strings.TrimSpace(s) != ""
}

var lockNameRule = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// checkStatus: a request that reached no service was refused as a client
// error; one that did was answered by the service's not-found.
func checkStatus(t *testing.T, target string, status int, reached bool) {
	t.Helper()
	switch {
	case status >= 500:
		t.Fatalf("%s: got %d, want no server error", target, status)
	case reached && status != http.StatusNotFound:
		t.Fatalf("%s: reached the service but got %d, want its 404", target, status)
	case !reached && status < 400:
		t.Fatalf("%s: got %d without reaching the service, want a refusal", target, status)
	}
}

// oneTag: a key has exactly one hash tag, so no name chose its slot.
func oneTag(t *testing.T, key string) {
	t.Helper()
	if strings.Count(key, "{") != 1 || strings.Count(key, "}") != 1 || strings.Index(key, "{") > strings.Index(key, "}") {
		t.Fatalf("key %q has not exactly one hash tag", key)
	}
}

// FuzzResourcePath: GET /locks/<segment> never panics or answers 5xx;
// a resource that reaches the service re-validates and reaches it again,
// unchanged, when sent percent-encoded; and two segments reach it as the
// same resource exactly when they name the same lock key.
func FuzzResourcePath(f *testing.F) {
	f.Add("job-1", "job%2D1")
	e, rec := newRecordingGateway()
	accept := func(t *testing.T, seg string) (string, bool) {
		t.Helper()
		rec.reset()
		status, ok := serveRaw(e, "GET", "/locks/"+seg)
		if !ok {
			return "", false
		}
		got, _, _ := rec.got()
		checkStatus(t, seg, status, got != nil)
		if got == nil {
			return "", false
		}
		if !validResource(*got) {
			t.Fatalf("%q: accepted resource %q, which does not validate", seg, *got)
		}
		rec.reset()
		if status, _ := serveRaw(e, "GET", "/locks/"+url.PathEscape(*got)); status != http.StatusNotFound {
			t.Fatalf("%q: resource %q sent escaped: got %d, want it accepted", seg, *got, status)
		}
		if again, _, _ := rec.got(); again == nil || *again != *got {
			t.Fatalf("%q: resource %q sent escaped reached the service as %v", seg, *got, again)
		}
		return *got, true
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ra, okA := accept(t, a)
		rb, okB := accept(t, b)
		if !okA || !okB {
			return
		}
		ka, kb := keyspace.Space{}.Resource("t", ra).Lock(), keyspace.Space{}.Resource("t", rb).Lock()
		oneTag(t, ka)
		if (ra == rb) != (ka == kb) {
			t.Fatalf("%q -> %q (key %q) and %q -> %q (key %q): distinct resources must have distinct keys", a, ra, ka, b, rb, kb)
		}
	})
}

// FuzzUserLockPath: DELETE /user-locks/<name>/<user_id> and GET
// /abuse/flagged/<user_id> never panic or answer 5xx; what reaches the
// service re-validates and reaches it again when sent percent-encoded;
// and distinct (name, user) pairs get distinct counter keys, distinct
// users distinct ban keys.
func FuzzUserLockPath(f *testing.F) {
	f.Add("login", "u-1", "login", "u%2D1")
	e, rec := newRecordingGateway()
	accept := func(t *testing.T, name, user string) (string, string, bool) {
		t.Helper()
		rec.reset()
		target := "/user-locks/" + name + "/" + user
		status, ok := serveRaw(e, "DELETE", target)
		if !ok {
			return "", "", false
		}
		_, gn, gu := rec.got()
		checkStatus(t, target, status, gu != nil)
		if gu == nil {
			return "", "", false
		}
		if !lockNameRule.MatchString(*gn) || !validUserID(*gu) {
			t.Fatalf("%q: accepted name %q and user %q, which do not validate", target, *gn, *gu)
		}
		rec.reset()
		if status, _ := serveRaw(e, "DELETE", "/user-locks/"+url.PathEscape(*gn)+"/"+url.PathEscape(*gu)); status != http.StatusNotFound {
			t.Fatalf("%q: sent escaped: got %d, want it accepted", target, status)
		}
		if _, n2, u2 := rec.got(); n2 == nil || u2 == nil || *n2 != *gn || *u2 != *gu {
			t.Fatalf("%q: sent escaped reached the service as %v, %v", target, n2, u2)
		}
		// The ops route reads {user_id} the same way. (Only when the raw
		// name has no '/': "0/" + "/" + "0" puts the router's split, and
		// so the user it reads, elsewhere than the raw user.)
		rec.reset()
		if status, ok := serveRaw(e, "GET", "/abuse/flagged/"+user); ok && !strings.Contains(name, "/") {
			_, _, fu := rec.got()
			checkStatus(t, "/abuse/flagged/"+user, status, fu != nil)
			if fu == nil || *fu != *gu {
				t.Fatalf("%q: GET /abuse/flagged read user %v, the user lock route %q", user, fu, *gu)
			}
		}
		return *gn, *gu, true
	}
	f.Fuzz(func(t *testing.T, n1, u1, n2, u2 string) {
		na, ua, okA := accept(t, n1, u1)
		nb, ub, okB := accept(t, n2, u2)
		if !okA || !okB {
			return
		}
		ca, cb := keyspace.Space{}.User("t", ua).Counter(na), keyspace.Space{}.User("t", ub).Counter(nb)
		oneTag(t, ca)
		if (na == nb && ua == ub) != (ca == cb) {
			t.Fatalf("(%q, %q) key %q and (%q, %q) key %q: distinct pairs must have distinct keys", na, ua, ca, nb, ub, cb)
		}
		ba, bb := keyspace.Space{}.User("t", ua).Ban(), keyspace.Space{}.User("t", ub).Ban()
		if (ua == ub) != (ba == bb) {
			t.Fatalf("users %q and %q share ban key %q=%q", ua, ub, ba, bb)
		}
	})
}

// The fuzz targets above would pass vacuously if nothing reached the
// recording services; this says what does and what does not.
func TestPathParamsReachTheRecordingServices(t *testing.T) {
	t.Parallel()
	e, rec := newRecordingGateway()
	for _, tc := range []struct {
		method, target string
		resource, user string // "" when refused
	}{
		{"GET", "/locks/job-1", "job-1", ""},
		{"GET", "/locks/a%2Fb", "a/b", ""},
		{"GET", "/locks/%E2%80%8B", "\u200b", ""},
		{"GET", "/locks/a%00b", "", ""},
		{"GET", "/locks/%C3%28", "", ""},
		{"GET", "/locks/%ZZ", "", ""}, // net/http refuses it before routing
		{"DELETE", "/user-locks/login/u%3A1", "", "u:1"},
		{"DELETE", "/user-locks/log%2Fin/u", "", ""},
		{"DELETE", "/user-locks/login/%20%20", "", ""},
	} {
		rec.reset()
		status, ok := serveRaw(e, tc.method, tc.target)
		r, _, u := rec.got()
		switch {
		case !ok:
			if tc.resource != "" || tc.user != "" {
				t.Errorf("%s %s: net/http refused the request line", tc.method, tc.target)
			}
		case tc.resource != "" && (r == nil || *r != tc.resource || status != http.StatusNotFound):
			t.Errorf("%s %s: got %d reaching resource %v, want 404 from the service for %q", tc.method, tc.target, status, r, tc.resource)
		case tc.user != "" && (u == nil || *u != tc.user || status != http.StatusNotFound):
			t.Errorf("%s %s: got %d reaching user %v, want 404 from the service for %q", tc.method, tc.target, status, u, tc.user)
		case tc.resource == "" && tc.user == "" && (r != nil || u != nil || status < 400 || status >= 500):
			t.Errorf("%s %s: got %d reaching %v %v, want a refusal", tc.method, tc.target, status, r, u)
		}
	}
}
