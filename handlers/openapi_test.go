package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate/abuse"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/internal/apptest"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// specCase is one request of the spec scenario. Cases run in order against
// one gateway, so a case sees the locks the cases before it left.
type specCase struct {
	name   string // reads as a sentence
	method string
	// target is the path and query; "{token}" is replaced by the fencing
	// token of the last lease a response showed.
	target string
	key    string // API key: keyClient, keyOps, "" (no Authorization) or any other string
	ctype  string // Content-Type of a non-empty body; "" means application/json
	body   string // "{token}" is replaced as in target
	status int
	// specRejects: the request itself breaks openapi.yaml, so
	// ValidateRequest must fail (the spec agrees it is bad input). False
	// for bad input the schemas cannot express (e.g. 60.0 is an integer in
	// JSON Schema but not an integer literal); the gateway is stricter.
	specRejects bool
	redisDown   bool // make every Redis command fail for this request
	// cookies sends the cookies earlier answers set (a browser's jar);
	// "{csrf}" in body is replaced by the ops page's CSRF cookie.
	cookies bool
	// before, when set, runs just before the request (e.g. to break data).
	before func(t *testing.T, g *specGateway)
}

const (
	keyClient  = "client-key-0123456789"
	keyOps     = "ops-key-0123456789"
	specTenant = "spec-tenant"
	formType   = "application/x-www-form-urlencoded"
)

var (
	tooBigOwner  = strings.Repeat("o", 20<<10)
	longResource = strings.Repeat("r", 256)
)

// specRoutes drives every route the gateway registers through the
// gateway; each answer (and each request) is validated against
// api/openapi.yaml. A case for a new route is one line.
var specRoutes = []specCase{
	{name: "healthz answers without a key", method: "GET", target: "/healthz", status: 200},
	{name: "readyz answers without a key while Redis is up", method: "GET", target: "/readyz", status: 200},
	{name: "readyz is 503 with Retry-After while Redis is down", method: "GET", target: "/readyz", status: 503, redisDown: true},

	{name: "acquire on a free resource grants a lease", method: "POST", target: "/locks/doc", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":30}`, status: 200},
	{name: "acquire by the same owner again keeps the lease", method: "POST", target: "/locks/doc", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":30}`, status: 200},
	{name: "acquire by another owner is told to retry", method: "POST", target: "/locks/doc", key: keyClient, body: `{"owner":"svc-b","ttl_seconds":30}`, status: 200},
	{name: "acquire with wait_ms 0 by another owner is told to retry", method: "POST", target: "/locks/doc", key: keyOps, body: `{"owner":"svc-b","ttl_seconds":30,"wait_ms":0}`, status: 200},
	{name: "status shows the live lease", method: "GET", target: "/locks/doc", key: keyClient, status: 200},
	{name: "status of a resource with no lock is 404", method: "GET", target: "/locks/nothing-here", key: keyClient, status: 404},
	{name: "renew by the owner extends the lease", method: "POST", target: "/locks/doc/renew", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":60}`, status: 200},
	{name: "renew with the current token extends the lease", method: "POST", target: "/locks/doc/renew", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":60,"token":{token}}`, status: 200},
	{name: "renew with another token is 403", method: "POST", target: "/locks/doc/renew", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":60,"token":1}`, status: 403},
	{name: "renew by another owner is 403", method: "POST", target: "/locks/doc/renew", key: keyClient, body: `{"owner":"svc-b","ttl_seconds":60}`, status: 403},
	{name: "renew of a resource with no lock is 404", method: "POST", target: "/locks/nothing-here/renew", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":60}`, status: 404},
	{name: "renew with a ttl of 0 is 422", method: "POST", target: "/locks/doc/renew", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":0}`, status: 422, specRejects: true},
	{name: "release by another owner is 403", method: "DELETE", target: "/locks/doc?owner=svc-b", key: keyClient, status: 403},
	{name: "release with another token is 403", method: "DELETE", target: "/locks/doc?owner=svc-a&token=1", key: keyClient, status: 403},
	{name: "release with owner in body and query disagreeing is 422", method: "DELETE", target: "/locks/doc?owner=svc-b", key: keyClient, body: `{"owner":"svc-a"}`, status: 422},
	{name: "release without an owner is 422", method: "DELETE", target: "/locks/doc", key: keyClient, status: 422},
	{name: "release with an unknown query parameter is 422", method: "DELETE", target: "/locks/doc?owner=svc-a&colour=red", key: keyClient, status: 422},
	{name: "release by the owner with its token in the body is 204", method: "DELETE", target: "/locks/doc", key: keyClient, body: `{"owner":"svc-a","token":{token}}`, status: 204},
	{name: "release of a resource with no lock is 404", method: "DELETE", target: "/locks/doc?owner=svc-a", key: keyClient, status: 404},
	{name: "acquire on a percent-encoded resource grants a lease", method: "POST", target: "/locks/a%20b%3A%C3%BC", key: keyClient, body: `{"owner":"svc-a","ttl_seconds":5}`, status: 200},
	{name: "release by the owner in the query is 204", method: "DELETE", target: "/locks/a%20b%3A%C3%BC?owner=svc-a", key: keyClient, status: 204},

	{name: "acquire with an unknown field is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":5,"colour":"red"}`, status: 422, specRejects: true},
	{name: "acquire without an owner is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"ttl_seconds":5}`, status: 422, specRejects: true},
	{name: "acquire with a whitespace-only owner is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"   ","ttl_seconds":5}`, status: 422, specRejects: true},
	{name: "acquire with a fractional ttl is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":60.5}`, status: 422, specRejects: true},
	{name: "acquire with ttl 60.0 is 422 though JSON Schema calls it an integer", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":60.0}`, status: 422},
	{name: "acquire with a string ttl is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":"60"}`, status: 422, specRejects: true},
	{name: "acquire with a ttl over the maximum is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":86401}`, status: 422, specRejects: true},
	{name: "acquire with wait_ms over the maximum is 422", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":5,"wait_ms":30001}`, status: 422, specRejects: true},
	{name: "acquire without a body is 422", method: "POST", target: "/locks/v", key: keyClient, status: 422, specRejects: true},
	{name: "acquire on a resource with a control character is 422", method: "POST", target: "/locks/a%01b", key: keyClient, body: `{"owner":"a","ttl_seconds":5}`, status: 422, specRejects: true},
	{name: "acquire on a 256-byte resource is 422", method: "POST", target: "/locks/" + longResource, key: keyClient, body: `{"owner":"a","ttl_seconds":5}`, status: 422, specRejects: true},
	{name: "acquire with malformed JSON is 400", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":`, status: 400, specRejects: true},
	{name: "acquire with a JSON array is 400", method: "POST", target: "/locks/v", key: keyClient, body: `[]`, status: 400, specRejects: true},
	{name: "acquire with a body over the limit is 413", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"` + tooBigOwner + `","ttl_seconds":5}`, status: 413, specRejects: true},
	{name: "acquire with a text/plain body is 415", method: "POST", target: "/locks/v", key: keyClient, ctype: "text/plain", body: `{"owner":"a","ttl_seconds":5}`, status: 415, specRejects: true},
	{name: "acquire while Redis is down is 503 with Retry-After", method: "POST", target: "/locks/v", key: keyClient, body: `{"owner":"a","ttl_seconds":5}`, status: 503, redisDown: true},
	{name: "status while Redis is down is 503", method: "GET", target: "/locks/v", key: keyClient, status: 503, redisDown: true},

	{name: "status of a lock whose data is garbled is a 500 internal problem", method: "GET", target: "/locks/garbled", key: keyClient, status: 500, before: garble("garbled")},

	{name: "a lock route without a key is 401 with WWW-Authenticate", method: "POST", target: "/locks/v", body: `{"owner":"a","ttl_seconds":5}`, status: 401, specRejects: true},
	{name: "a lock route with an unknown key is 401", method: "GET", target: "/locks/v", key: "not-a-key", status: 401},
	{name: "metrics with a client key is 403", method: "GET", target: "/metrics", key: keyClient, status: 403},
	{name: "metrics with an ops key is the Prometheus text", method: "GET", target: "/metrics", key: keyOps, status: 200},
	{name: "openapi.yaml with a client key is this document", method: "GET", target: "/openapi.yaml", key: keyClient, status: 200},
	{name: "openapi.yaml without a key is 401", method: "GET", target: "/openapi.yaml", status: 401, specRejects: true},

	{name: "a first user-lock attempt acquires", method: "POST", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 200},
	{name: "a second user-lock attempt counts", method: "POST", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, body: `{"ttl_seconds":10}`, status: 200},
	{name: "a third user-lock attempt counts", method: "POST", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 200},
	{name: "a fourth user-lock attempt counts", method: "POST", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 200},
	{name: "the fifth user-lock attempt flags the user", method: "POST", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 200},
	{name: "clearing a user lock is 204", method: "DELETE", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 204},
	{name: "clearing a user lock that is not there is 404", method: "DELETE", target: "/user-locks/receiveDailyTask/u-1", key: keyClient, status: 404},
	{name: "a user lock with a bad name is 422", method: "POST", target: "/user-locks/bad%20name/u-1", key: keyClient, status: 422, specRejects: true},
	{name: "a user lock with a ttl of 0 is 422", method: "POST", target: "/user-locks/receiveDailyTask/u-9", key: keyClient, body: `{"ttl_seconds":0}`, status: 422, specRejects: true},
	{name: "a user lock with an unknown field is 422", method: "POST", target: "/user-locks/receiveDailyTask/u-9", key: keyClient, body: `{"ttl":10}`, status: 422, specRejects: true},
	{name: "listing flagged users is a page", method: "GET", target: "/abuse/flagged", key: keyOps, status: 200},
	{name: "listing flagged users by lock with a limit is a page", method: "GET", target: "/abuse/flagged?lock=receiveDailyTask&limit=10", key: keyOps, status: 200},
	{name: "listing flagged users with a client key is 403", method: "GET", target: "/abuse/flagged", key: keyClient, status: 403},
	{name: "showing a flagged user lists its flags", method: "GET", target: "/abuse/flagged/u-1", key: keyOps, status: 200},
	{name: "showing a user with no flags is 404", method: "GET", target: "/abuse/flagged/nobody", key: keyOps, status: 404},
	{name: "banning a user is 201", method: "POST", target: "/abuse/bans/u-2", key: keyOps, body: `{"seconds":60,"reason":"spec test"}`, status: 201},
	{name: "a banned user's attempt is 429 with Retry-After", method: "POST", target: "/user-locks/receiveDailyTask/u-2", key: keyClient, status: 429},
	{name: "banning with seconds 0 is 422", method: "POST", target: "/abuse/bans/u-2", key: keyOps, body: `{"seconds":0}`, status: 422, specRejects: true},
	{name: "a backtest is 200 with the users that differ", method: "POST", target: "/abuse/backtest", key: keyOps, body: `{"lock":"receiveDailyTask","policy":{"max_attempts":2,"ban_after_flags":1,"ban_seconds":60}}`, status: 200},
	{name: "a backtest with max_attempts 0 is 422", method: "POST", target: "/abuse/backtest", key: keyOps, body: `{"lock":"receiveDailyTask","policy":{"max_attempts":0}}`, status: 422, specRejects: true},
	{name: "a backtest with a client key is 403", method: "POST", target: "/abuse/backtest", key: keyClient, body: `{"lock":"receiveDailyTask"}`, status: 403},
	{name: "unbanning a user is 204", method: "DELETE", target: "/abuse/bans/u-2", key: keyOps, status: 204},
	{name: "unbanning a user who is not banned is 404", method: "DELETE", target: "/abuse/bans/u-2", key: keyOps, status: 404},
	{name: "clearing a flagged user is 204", method: "DELETE", target: "/abuse/flagged/u-1", key: keyOps, status: 204},
	{name: "the webhook status is 200", method: "GET", target: "/abuse/webhooks?limit=5", key: keyOps, status: 200},
	{name: "the webhook status with a client key is 403", method: "GET", target: "/abuse/webhooks", key: keyClient, status: 403},
	{name: "the webhook status with limit 0 is 422", method: "GET", target: "/abuse/webhooks?limit=0", key: keyOps, status: 422, specRejects: true},
	{name: "clearing a user with no flags is 404", method: "DELETE", target: "/abuse/flagged/u-1", key: keyOps, status: 404},
	{name: "the ops page is HTML for an ops key", method: "GET", target: "/ops/", key: keyOps, status: 200},
	{name: "the ops page with a client key is 403", method: "GET", target: "/ops/", key: keyClient, status: 403},
	{name: "the What if view is HTML for an ops key", method: "GET", target: "/ops/whatif?lock=receiveDailyTask&max_attempts=2", key: keyOps, status: 200},
	{name: "the What if view naming a refused field is 422", method: "GET", target: "/ops/whatif?lock=receiveDailyTask&max_attempts=0", key: keyOps, status: 422},

	{name: "the ops page without a key or session redirects to the login form", method: "GET", target: "/ops/", status: 303, specRejects: true},
	{name: "the /ops redirect needs no key", method: "GET", target: "/ops", status: 301},
	{name: "the ops stylesheet needs no key", method: "GET", target: "/ops/assets/ops.css", status: 200},
	{name: "the login form needs no key", method: "GET", target: "/ops/login", status: 200, cookies: true},
	{name: "a login with a client key is 403 with the form again", method: "POST", target: "/ops/login", ctype: formType, body: "csrf={csrf}&key=" + keyClient, status: 403, cookies: true},
	{name: "a login with an unknown key is 401 with the form again", method: "POST", target: "/ops/login", ctype: formType, body: "csrf={csrf}&key=not-a-key-0123456789", status: 401, cookies: true},
	{name: "a login without the CSRF token is 403", method: "POST", target: "/ops/login", ctype: formType, body: "key=" + keyOps, status: 403, cookies: true, specRejects: true},
	{name: "a login with a JSON body is 415", method: "POST", target: "/ops/login", body: `{"key":"x"}`, status: 415, cookies: true, specRejects: true},
	{name: "a login with an ops key is 303 to the page with a session", method: "POST", target: "/ops/login", ctype: formType, body: "csrf={csrf}&key=" + keyOps, status: 303, cookies: true},
	{name: "the ops page with the session is HTML", method: "GET", target: "/ops/?lock=receiveDailyTask", status: 200, cookies: true},
	{name: "the login form with a session redirects to the page", method: "GET", target: "/ops/login", status: 303, cookies: true},
	{name: "banning from the page is 303 back to it", method: "POST", target: "/ops/ban", ctype: formType, body: "csrf={csrf}&user_id=u-3&seconds=600&reason=spec+test", status: 303, cookies: true},
	{name: "unbanning from the page is 303 back to it", method: "POST", target: "/ops/unban", ctype: formType, body: "csrf={csrf}&user_id=u-3", status: 303, cookies: true},
	{name: "clearing from the page is 303 back to it", method: "POST", target: "/ops/clear", ctype: formType, body: "csrf={csrf}&user_id=u-3&lock=receiveDailyTask", status: 303, cookies: true},
	{name: "a page action without the CSRF token is 403", method: "POST", target: "/ops/clear", ctype: formType, body: "user_id=u-3", status: 403, cookies: true, specRejects: true},
	{name: "a page action with an ops key and the CSRF token is 303", method: "POST", target: "/ops/unban", key: keyOps, ctype: formType, body: "csrf={csrf}&user_id=u-3", status: 303, cookies: true},
	{name: "a page action without a session or key redirects to the login form", method: "POST", target: "/ops/clear", ctype: formType, body: "csrf=x&user_id=u-3", status: 303, specRejects: true},
	{name: "the JSON API does not take the session cookie", method: "GET", target: "/abuse/flagged", status: 401, cookies: true, specRejects: true},
	{name: "logging out is 303 to the login form", method: "POST", target: "/ops/logout", ctype: formType, body: "csrf={csrf}", status: 303, cookies: true},
	{name: "the ops page after logging out redirects to the login form", method: "GET", target: "/ops/", status: 303, cookies: true, specRejects: true},

	{name: "an unknown route is 404", method: "GET", target: "/no/such/route", key: keyClient, status: 404},
	{name: "PUT on a lock is 405 with Allow", method: "PUT", target: "/locks/doc", key: keyClient, body: `{}`, status: 405},
	{name: "POST on healthz is 405 with Allow", method: "POST", target: "/healthz", status: 405},
}

// specGateway is a gateway on a Redis plus the loaded spec. Its
// authenticator is the real one (package auth) with one client and one
// ops key of specTenant, so the spec's security, 401 and 403 answers and
// the ops page's login are the production ones.
type specGateway struct {
	*apptest.App
	locks  *redislock.Locker // the lock engine in the test keys' tenant
	doc    *openapi3.T
	router routers.Router
	// outage makes every Redis command fail until restore is called.
	outage func(t *testing.T) (restore func())
	// jar holds the cookies answers set, by name.
	jar map[string]*http.Cookie
}

// newSpecGateway is a gateway on miniredis.
func newSpecGateway(t *testing.T) *specGateway {
	t.Helper()
	b := redistest.OnMini(t)
	g := newSpecGatewayOn(t, b)
	g.outage = func(*testing.T) func() {
		b.Mini.SetError("ERR injected outage")
		return func() { b.Mini.SetError("") }
	}
	return g
}

// newSpecGatewayOnRealRedis is a gateway on a real redis-server; an
// outage kills it and restore starts it again (empty: no persistence).
func newSpecGatewayOnRealRedis(t *testing.T) *specGateway {
	t.Helper()
	// No retries: a case under an outage is answered at once.
	b := redistest.OnRedis(t).WithoutRetries(t)
	g := newSpecGatewayOn(t, b)
	g.outage = func(t *testing.T) func() {
		t.Helper()
		b.Server.Kill()
		return func() {
			b.Server.Restart()
			if err := b.RDB.Ping(context.Background()).Err(); err != nil {
				t.Fatalf("ping %s after restart: %v", b.Server, err)
			}
		}
	}
	return g
}

func newSpecGatewayOn(t *testing.T, b *redistest.Backend) *specGateway {
	t.Helper()
	pol := abuse.DefaultPolicies()
	pol.AttemptLogMaxEntries = 1000 // for POST /abuse/backtest
	app := apptest.NewApp(t, b, apptest.Options{
		Prefix: "spec:", UserLocks: true, Sessions: true, Primitives: true, Policies: pol,
		Keys: []string{
			"spec-client:client:" + specTenant + ":" + auth.HashKey(keyClient),
			"spec-ops:ops:" + specTenant + ":" + auth.HashKey(keyOps),
		},
	})
	doc := loadSpec(t)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("building the spec router: %v", err)
	}
	return &specGateway{App: app, locks: app.Locker.Tenant(specTenant), doc: doc, router: router, jar: map[string]*http.Cookie{}}
}

func loadSpec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(api.Spec)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml does not validate: %v", err)
	}
	return doc
}

// bearerKeyPresent is the spec side of authentication: a request meets
// the bearer scheme when it sends a non-empty Bearer credential, and the
// opsSession scheme when it sends the session cookie (whether they are
// valid is the gateway's business).
func bearerKeyPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName == "opsSession" {
		if ck, err := in.RequestValidationInput.Request.Cookie("leasegate_ops_session"); err != nil || ck.Value == "" {
			return errors.New("no session cookie")
		}
		return nil
	}
	if in.SecuritySchemeName != "bearer" {
		return errors.New("unknown security scheme " + in.SecuritySchemeName)
	}
	key, ok := strings.CutPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ")
	if !ok || key == "" {
		return errors.New("no Bearer credential")
	}
	return nil
}

func (g *specGateway) newRequest(t *testing.T, c specCase, target, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(c.method, target, r)
	if body != "" {
		ct := c.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.cookies {
		for _, ck := range g.jar {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
	}
	return req
}

// keepCookies updates the jar from an answer's Set-Cookie headers.
func (g *specGateway) keepCookies(res *http.Response) {
	for _, ck := range res.Cookies() {
		if ck.MaxAge < 0 {
			delete(g.jar, ck.Name)
		} else {
			g.jar[ck.Name] = ck
		}
	}
}

// run sends c through the gateway and checks the status, the request and
// the response against the spec. token is the last fencing token seen.
func (g *specGateway) run(t *testing.T, c specCase, token *int64) {
	t.Helper()
	target := strings.ReplaceAll(c.target, "{token}", strconv.FormatInt(*token, 10))
	body := strings.ReplaceAll(c.body, "{token}", strconv.FormatInt(*token, 10))
	if ck := g.jar["leasegate_ops_csrf"]; ck != nil {
		body = strings.ReplaceAll(body, "{csrf}", ck.Value)
	}

	if c.before != nil {
		c.before(t, g)
	}
	if c.redisDown {
		defer g.outage(t)()
	}
	res := apptest.Serve(g.E, g.newRequest(t, c, target, body)).Response
	defer g.keepCookies(res)
	got, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	if res.StatusCode != c.status {
		t.Fatalf("got status %d, want %d; body %s", res.StatusCode, c.status, got)
	}
	saveToken(got, token)

	ctx := context.Background()
	opts := &openapi3filter.Options{
		AuthenticationFunc:    bearerKeyPresent,
		IncludeResponseStatus: true, // a status openapi.yaml does not list is an error
		MultiError:            true,
	}
	req := g.newRequest(t, c, target, body) // a fresh body: validation reads it
	route, pathParams, err := g.router.FindRoute(req)
	if err != nil {
		g.checkUnrouted(t, c, req, res, got, err)
		return
	}
	// kin-openapi's router hands path parameters over still
	// percent-encoded; openapi.yaml describes them decoded, as the
	// gateway sees them.
	for k, v := range pathParams {
		if pathParams[k], err = url.PathUnescape(v); err != nil {
			t.Fatalf("decoding path parameter %s=%q: %v", k, v, err)
		}
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: pathParams, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	switch {
	case c.specRejects && reqErr == nil:
		t.Errorf("openapi.yaml accepts the request %s %s %s, want it rejected", c.method, target, abbreviate(body))
	case !c.specRejects && reqErr != nil:
		t.Errorf("openapi.yaml rejects the request %s %s %s: %v", c.method, target, abbreviate(body), reqErr)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in,
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                opts,
	}
	out.SetBodyBytes(got)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		t.Errorf("the answer breaks openapi.yaml: %v\nstatus %d, headers %v, body %s", err, res.StatusCode, res.Header, abbreviate(string(got)))
	}
}

// checkUnrouted checks a request that matches no operation of the spec:
// an unknown path must be the NotFound problem, a known path with another
// method the MethodNotAllowed problem with Allow. Both components are in
// openapi.yaml; OpenAPI has no place to hang them on the paths themselves.
func (g *specGateway) checkUnrouted(t *testing.T, c specCase, req *http.Request, res *http.Response, got []byte, findErr error) {
	t.Helper()
	var component string
	switch {
	case errors.Is(findErr, routers.ErrPathNotFound):
		component = "NotFound"
	case errors.Is(findErr, routers.ErrMethodNotAllowed):
		component = "MethodNotAllowed"
	default:
		t.Fatalf("finding the route of %s %s in openapi.yaml: %v", c.method, req.URL, findErr)
	}
	resp := g.doc.Components.Responses[component]
	if resp == nil {
		t.Fatalf("openapi.yaml has no components.responses.%s", component)
	}
	op := &openapi3.Operation{Responses: openapi3.NewResponses(openapi3.WithStatus(res.StatusCode, resp))}
	route := &routers.Route{Spec: g.doc, Path: req.URL.Path, Method: c.method, Operation: op}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, Route: route},
		Status:                 res.StatusCode,
		Header:                 res.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	out.SetBodyBytes(got)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Errorf("the answer breaks components.responses.%s: %v\nheaders %v, body %s", component, err, res.Header, got)
	}
}

// garble writes a live lease on resource whose token is not a number, so
// the lock engine meets a reply it never documents (a 500, not a panic).
func garble(resource string) func(*testing.T, *specGateway) {
	return func(t *testing.T, g *specGateway) {
		t.Helper()
		lock, _ := g.locks.Keys(resource)
		err := g.Backend.RDB.HSet(context.Background(), lock, "owner", "x", "token", "not-a-number", "acquired_at", "1", "expires_at", "99999999999999").Err()
		if err != nil {
			t.Fatalf("garbling %s: %v", lock, err)
		}
	}
}

// saveToken remembers the fencing token of a lease (or the term of a
// leadership) in a JSON answer.
func saveToken(body []byte, token *int64) {
	var v struct {
		Lock *struct {
			Token int64 `json:"token"`
		} `json:"lock"`
		Leadership *struct {
			Term int64 `json:"term"`
		} `json:"leadership"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	switch {
	case v.Lock != nil:
		*token = v.Lock.Token
	case v.Leadership != nil:
		*token = v.Leadership.Term
	}
}

func abbreviate(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}

// TestRoutesAnswerAsOpenAPISays drives every route through the gateway
// and validates each request and answer against api/openapi.yaml.
func TestRoutesAnswerAsOpenAPISays(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGateway(t), specRoutes)
}

// TestRoutesAnswerAsOpenAPISaysOnRealRedis is the same scenario on a real
// redis-server, whose Lua and clock are the production ones.
func TestRoutesAnswerAsOpenAPISaysOnRealRedis(t *testing.T) {
	t.Parallel()
	runSpecCases(t, newSpecGatewayOnRealRedis(t), specRoutes)
}

func runSpecCases(t *testing.T, g *specGateway, cases []specCase) {
	t.Helper()
	var token int64
	for _, c := range cases {
		if !t.Run(c.name, func(t *testing.T) { g.run(t, c, &token) }) {
			// Later cases build on earlier ones.
			return
		}
	}
}

func TestOpenAPIYAMLServesTheEmbeddedDocument(t *testing.T) {
	t.Parallel()
	g := newSpecGateway(t)
	res := g.Do(t, http.MethodGet, "/openapi.yaml", "", "Authorization", "Bearer "+keyClient)
	if got, want := res.Header.Get("Content-Type"), "application/yaml"; got != want {
		t.Errorf("got Content-Type %q, want %q", got, want)
	}
	got, _ := io.ReadAll(res.Body)
	if !bytes.Equal(got, api.Spec) {
		t.Errorf("got a %d-byte body, want api.Spec (%d bytes)", len(got), len(api.Spec))
	}
}

// TestEveryRouteIsInTheSpecAndBack catches drift after merges: every
// route handlers.New registers is an operation of openapi.yaml, and every
// operation is registered.
func TestEveryRouteIsInTheSpecAndBack(t *testing.T) {
	t.Parallel()
	g := newSpecGateway(t)

	registered := map[string]bool{}
	for _, r := range g.E.Routes() {
		if r.Method == http.MethodOptions || r.Method == echo.RouteNotFound {
			continue
		}
		registered[r.Method+" "+openAPIPath(r.Path)] = true
	}
	documented := map[string]bool{}
	for path, item := range g.doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	for op := range registered {
		if !documented[op] {
			t.Errorf("%s is registered in handlers.New but not described in api/openapi.yaml", op)
		}
	}
	for op := range documented {
		if !registered[op] {
			t.Errorf("%s is described in api/openapi.yaml but not registered in handlers.New", op)
		}
	}
}

// openAPIPath turns Echo's /locks/:resource into OpenAPI's /locks/{resource}.
func openAPIPath(echoPath string) string {
	parts := strings.Split(echoPath, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestOptionsAnswersAllowWithoutAKey pins what openapi.yaml says of
// OPTIONS, which it cannot describe as an operation: 204 with Allow, no
// body, no key needed.
func TestOptionsAnswersAllowWithoutAKey(t *testing.T) {
	t.Parallel()
	g := newSpecGateway(t)
	res := g.Do(t, http.MethodOptions, "/locks/doc", "")
	if res.StatusCode != http.StatusNoContent {
		t.Fatalf("got status %d, want 204", res.StatusCode)
	}
	allow := res.Header.Get("Allow")
	for _, m := range []string{"GET", "POST", "DELETE"} {
		if !strings.Contains(allow, m) {
			t.Errorf("got Allow %q, want it to name %s", allow, m)
		}
	}
}
