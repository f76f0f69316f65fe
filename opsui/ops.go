// Package opsui is the ops page: the HTML face, for operators in a
// browser, of the services the JSON routes of package handlers serve
// (the abuse review, the locks and audit views, the browser login).
// Register adds its routes under /ops to the Echo instance handlers.New
// returns; it holds its forms to the same input rules as the routes
// (handlers.Check...) and answers its errors with the same mapping
// (handlers.Problem), as HTML for a browser.
package opsui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
	"github.com/leasegate/leasegate/handlers"
)

// UI is the page's routes and what they need: the configuration and
// services of the JSON routes.
type UI struct {
	cfg      handlers.Config
	deps     handlers.Deps
	sessions Sessions
	log      *zap.Logger
}

// Register adds the page's routes to e, which handlers.New built from the
// same cfg and deps: the abuse review with deps.Flags, the locks and
// audit views with deps.Operator; nothing without either. sessions, when
// not nil, lets operators log in in a browser with an ops key
// (auth.Sessions); without it the page takes only what deps.Auth takes
// (a Bearer key, or open mode).
func Register(e *echo.Echo, cfg handlers.Config, deps handlers.Deps, sessions Sessions) {
	deps = deps.WithDefaults()
	a := &UI{cfg: cfg, deps: deps, sessions: sessions, log: deps.Log}
	authn := deps.Authn()
	if deps.Flags != nil {
		a.registerOps(e, authn)
	}
	if deps.Operator != nil {
		a.registerOpsLocks(e, authn)
	}
}

// opContext bounds the store work of one request, as the routes do.
func (a *UI) opContext(c echo.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Request().Context(), a.cfg.RequestTimeout)
}

// The /ops/ page: server-rendered with html/template (which escapes every
// user id), its stylesheet embedded, no script at all. Its forms post to
// /ops/clear, /ops/ban, /ops/unban, /ops/login and /ops/logout and are
// protected against CSRF twice: http.CrossOriginProtection refuses
// cross-origin posts (by Sec-Fetch-Site, or Origin against Host), and
// every form carries a token that must equal the SameSite=Strict,
// HttpOnly cookie set with the page (double submit). With API keys a
// browser logs in at /ops/login (opslogin.go). See docs/abuse.md.

//go:embed opspage
var opsFiles embed.FS

var opsPage = template.Must(template.New("page.html").Funcs(template.FuncMap{
	// visible shows invisible and look-alike characters escaped
	// (visible.go).
	"visible": visible,
	// short shows a contract timestamp as "2026-11-30 09:30:00" (UTC),
	// the date and the time each kept on one line (a narrow column breaks
	// between them, not at a hyphen).
	"short": func(ts string) template.HTML {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return template.HTML(template.HTMLEscapeString(ts))
		}
		t = t.UTC()
		return template.HTML(`<span class="nw">` + t.Format(time.DateOnly) + `</span> <span class="nw">` + t.Format(time.TimeOnly) + `</span>`)
	},
}).ParseFS(opsFiles, "opspage/page.html", "opspage/timeline.html", "opspage/head.html", "opspage/paging.html"))

var loginPage = template.Must(template.ParseFS(opsFiles, "opspage/login.html", "opspage/head.html"))

var errorPage = template.Must(template.New("error.html").Funcs(template.FuncMap{
	"visible": visible,
}).ParseFS(opsFiles, "opspage/error.html", "opspage/head.html"))

// csrfCookie names the ops page's CSRF cookie.
const csrfCookie = "leasegate_ops_csrf"

// opsPageSize is how many flags one page shows.
const opsPageSize = 25

var crossOrigin = http.NewCrossOriginProtection()

type opsRow struct {
	UserID         string
	Lock           string
	TimesFlagged   int64
	PeakAttempts   int64
	FirstFlaggedAt string
	LastFlaggedAt  string
	BannedUntil    string
	// Ban is the user's active ban in full, nil when none.
	Ban *opsBan
	// AutomaticBans is how many bans the lock's policy has placed on the
	// user within the retention (escalation, docs/abuse.md).
	AutomaticBans int64
	// Timeline is the evidence: the attempts of the flagged window.
	Timeline     []opsTick
	TimelineFrom string
	TimelineTo   string
}

// opsBan is an active ban as the page shows it: until when, why, who
// placed it (an operator's name, or the policy of a lock) and when.
type opsBan struct {
	Until   string
	Reason  string
	By      string
	Source  string // "operator" or "policy"
	Lock    string // the lock whose policy placed it ("" for operators)
	Created string
}

func toOpsBan(b *leasegate.Ban) *opsBan {
	if b == nil {
		return nil
	}
	ob := &opsBan{Until: leasegate.FormatTime(b.Until), Reason: b.Reason, By: b.By, Source: b.Source, Lock: b.Lock}
	if !b.Created.IsZero() {
		ob.Created = leasegate.FormatTime(b.Created)
	}
	return ob
}

// opsTick is one attempt on the evidence timeline: X in 0..997 of the
// SVG's 1000 units across the attempts' span.
type opsTick struct {
	At string
	X  int
}

// timeline places the attempts across the SVG's width.
func timeline(at []time.Time) (ticks []opsTick, from, to string) {
	if len(at) == 0 {
		return nil, "", ""
	}
	first, last := at[0], at[len(at)-1]
	span := last.Sub(first)
	for _, t := range at {
		x := 0
		if span > 0 {
			x = int(int64(t.Sub(first)) * 997 / int64(span))
		}
		ticks = append(ticks, opsTick{At: leasegate.FormatTime(t), X: x})
	}
	return ticks, leasegate.FormatTime(first), leasegate.FormatTime(last)
}

type opsFlash struct {
	Kind string // "ok" or "error"
	Text string
	User string
}

type opsView struct {
	// HasLocks: the Locks and Audit views exist (Deps.Operator); link them.
	HasLocks bool
	// HasWhatIf: the "What if" view exists (Deps.Backtests).
	HasWhatIf bool
	Tenant    string
	Operator  string
	// Session: the operator logged in with /ops/login (show Log out).
	Session  bool
	Lock     string
	CSRF     string
	Items    []opsRow
	Flash    *opsFlash
	Paged    bool
	FirstURL string
	NextURL  string
	PageSize int
	// Search is the user id looked up (?user_id=, exact match), "" for
	// the list. Found: the registry holds flags or a ban for it; Ban is
	// that ban (shown apart, as a banned user may have no flags left).
	Search string
	Found  bool
	Ban    *opsBan
}

// opsMessages are the fixed texts a redirect may ask the page to show
// (?msg=), so nobody can make the page say something else.
var opsMessages = map[string]opsFlash{
	"cleared":     {Kind: "ok", Text: "Cleared the flags and any ban of"},
	"banned":      {Kind: "ok", Text: "Banned"},
	"unbanned":    {Kind: "ok", Text: "Lifted the ban of"},
	"notfound":    {Kind: "error", Text: "Nothing to do: there was nothing there for"},
	"allowlisted": {Kind: "error", Text: "Allowlisted users cannot be banned:"},
	"invalid":     {Kind: "error", Text: "The request was not valid; nothing was changed."},
}

// registerOps adds the page's routes. authn is the API's authentication;
// the page's own routes also take the session cookie of /ops/login
// (pageAuth), which no other route accepts. The redirect and the
// stylesheet are public: the login form needs the stylesheet, and both
// are the same fixed bytes for everyone.
func (a *UI) registerOps(e *echo.Echo, authn echo.MiddlewareFunc) {
	page := []echo.MiddlewareFunc{a.pageAuth(authn), handlers.RequireRole(leasegate.RoleOps)}
	// The page's errors are HTML for browsers; this wraps the error
	// handler handlers.New has set (problem+json for everyone else).
	e.HTTPErrorHandler = a.pageErrors(e.HTTPErrorHandler)
	e.GET("/ops", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, "/ops/")
	})
	e.GET("/ops/assets/ops.css", opsAsset("ops.css"))
	e.GET("/ops/", handlers.Wrap(a.opsPage, page...))
	e.POST("/ops/clear", handlers.Wrap(a.opsAction("clear"), page...))
	e.POST("/ops/ban", handlers.Wrap(a.opsAction("ban"), page...))
	e.POST("/ops/unban", handlers.Wrap(a.opsAction("unban"), page...))
	if a.deps.Backtests != nil {
		e.GET("/ops/whatif", handlers.Wrap(a.whatIf, page...))
	}
	if a.deps.Auth == nil || a.sessions != nil {
		e.GET("/ops/login", a.loginForm)
		e.POST("/ops/login", a.loginSubmit)
		e.POST("/ops/logout", a.logout)
	}
}

// opsAsset serves the page's stylesheet name (under opspage/), read from
// the embedded files once, when the route is registered.
func opsAsset(name string) echo.HandlerFunc {
	b, err := fs.ReadFile(opsFiles, "opspage/"+name)
	return func(c echo.Context) error {
		if err != nil {
			return err
		}
		c.Response().Header().Set("Cache-Control", "no-cache")
		return c.Blob(http.StatusOK, "text/css; charset=utf-8", b)
	}
}

// fromPage reports whether a request is a browser's on the page's
// routes: a path under /ops whose Accept names text/html, as every
// browser's navigation and form post does. Scripts (no Accept, */*, or
// JSON) keep getting problem+json there, as on every other route.
func fromPage(r *http.Request) bool {
	p := r.URL.Path
	if p != "/ops" && !strings.HasPrefix(p, "/ops/") {
		return false
	}
	for _, part := range strings.Split(r.Header.Get(echo.HeaderAccept), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err == nil && mt == echo.MIMETextHTML {
			return true
		}
	}
	return false
}

type errorView struct {
	api.Problem
	Fields   []leasegate.FieldError
	Back     string
	BackText string
}

// pageErrors answers the page's failed requests (fromPage) with an HTML
// page in the page's style: what went wrong, the status code kept, and a
// link back (to the login form for the login and logout forms, else to
// the page). Everything else goes to next.
func (a *UI) pageErrors(next echo.HTTPErrorHandler) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed || !fromPage(c.Request()) {
			next(err, c)
			return
		}
		p := handlers.Problem(c, a.log, err)
		v := errorView{Problem: p, Fields: p.Errors, Back: "/ops/", BackText: "Back to the ops page"}
		switch c.Request().URL.Path {
		case "/ops/login", "/ops/logout":
			v.Back, v.BackText = "/ops/login", "Back to the login form"
		}
		var buf bytes.Buffer
		if err := errorPage.Execute(&buf, v); err != nil {
			a.log.Error("rendering the ops error page", zap.Error(err))
			next(err, c)
			return
		}
		h := c.Response().Header()
		pageHeaders(h)
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		c.Response().WriteHeader(p.Status)
		// The same answer as the JSON routes', in HTML: counted as theirs.
		handlers.CountProblem(c, a.deps.Metrics, p)
		if c.Request().Method == http.MethodHead {
			return
		}
		_, _ = c.Response().Write(buf.Bytes())
	}
}

// pageHeaders lock the page down: nothing but its own stylesheet and
// forms, never framed.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// csrfToken returns the request's CSRF cookie value, setting a new one
// when there is none or it is malformed.
func (a *UI) csrfToken(c echo.Context) string {
	if ck, err := c.Cookie(csrfCookie); err == nil && validToken(ck.Value) {
		return ck.Value
	}
	return a.newCSRFToken(c)
}

// newCSRFToken sets a fresh CSRF cookie and returns its value.
func (a *UI) newCSRFToken(c echo.Context) string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	tok := hex.EncodeToString(b[:])
	c.SetCookie(&http.Cookie{
		Name:     csrfCookie,
		Value:    tok,
		Path:     "/ops/",
		HttpOnly: true,
		Secure:   a.secureCookies(c),
		SameSite: http.SameSiteStrictMode,
	})
	return tok
}

func validToken(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func (a *UI) opsPage(c echo.Context) error {
	q, err := handlers.CheckFlagQuery(c, "msg", "user", "user_id")
	msg := c.QueryParam("msg")
	user := c.QueryParam("user")
	search := c.QueryParam("user_id")
	if search != "" && err == nil {
		err = handlers.CheckUserID(search)
	}
	if err != nil {
		// A hand-edited URL: show the first page rather than JSON.
		return c.Redirect(http.StatusSeeOther, "/ops/?msg=invalid")
	}
	q.Limit = opsPageSize
	ctx, cancel := a.opContext(c)
	defer cancel()
	tenant := handlers.Principal(c).Tenant
	v := opsView{
		HasLocks:  a.deps.Operator != nil,
		HasWhatIf: a.deps.Backtests != nil,
		Tenant:    tenant,
		Operator:  handlers.Principal(c).Actor(),
		Lock:      q.Lock,
		CSRF:      a.csrfToken(c),
		Session:   viaSession(c),
		Paged:     q.Cursor != "",
		FirstURL:  pageURL("/ops/", "lock", q.Lock),
		PageSize:  opsPageSize,
		Search:    search,
	}
	if f, ok := opsMessages[msg]; ok {
		if msg != "invalid" {
			f.User = user
		}
		v.Flash = &f
	}
	var flags []leasegate.Flag
	// bans caches the ban of each banned user on the page: the list
	// carries only the end of a ban, so its reason and author cost one
	// look-up per banned user shown (at most a page's worth).
	bans := map[string]*opsBan{}
	if search != "" {
		// An exact match: the registry is keyed by user id and keeps no
		// index of them, so a prefix search would mean scanning every
		// flag of the tenant (docs/abuse.md).
		uf, err := a.deps.Flags.Get(ctx, tenant, search)
		switch {
		case errors.Is(err, leasegate.ErrUserNotFound):
		case err != nil:
			return err
		default:
			v.Found = true
			v.Ban = toOpsBan(uf.Ban)
			bans[search] = v.Ban
			flags = uf.Flags
		}
		v.Lock, v.Paged, v.FirstURL = "", false, "/ops/"
	} else {
		page, err := a.deps.Flags.List(ctx, tenant, q)
		if errors.Is(err, leasegate.ErrBadCursor) {
			return c.Redirect(http.StatusSeeOther, "/ops/?msg=invalid")
		}
		if err != nil {
			return err
		}
		if page.NextCursor != "" {
			v.NextURL = pageURL("/ops/", "lock", q.Lock, "cursor", page.NextCursor)
		}
		flags = page.Items
	}
	for _, f := range flags {
		r := opsRow{
			UserID:         f.UserID,
			Lock:           f.Lock,
			TimesFlagged:   f.TimesFlagged,
			PeakAttempts:   f.PeakAttempts,
			FirstFlaggedAt: leasegate.FormatTime(f.FirstFlaggedAt),
			LastFlaggedAt:  leasegate.FormatTime(f.LastFlaggedAt),
		}
		if !f.BannedUntil.IsZero() {
			r.BannedUntil = leasegate.FormatTime(f.BannedUntil)
			b, ok := bans[f.UserID]
			if !ok && f.Ban != nil {
				// The registry gave the ban record with the flag.
				b, ok = toOpsBan(f.Ban), true
				bans[f.UserID] = b
			}
			if !ok {
				uf, err := a.deps.Flags.Get(ctx, tenant, f.UserID)
				switch {
				case errors.Is(err, leasegate.ErrUserNotFound):
					// Cleared since the list was read.
				case err != nil:
					return err
				default:
					b = toOpsBan(uf.Ban)
				}
				bans[f.UserID] = b
			}
			r.Ban = b
		}
		r.AutomaticBans = f.AutomaticBans
		r.Timeline, r.TimelineFrom, r.TimelineTo = timeline(f.AttemptsAt)
		v.Items = append(v.Items, r)
	}
	return render(c, http.StatusOK, opsPage, "page.html", v)
}

// pageURL is path with a query of the pairs name, value of kv whose
// value is not "".
func pageURL(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// render answers with template name of t executed on v, as a page.
func render(c echo.Context, status int, t *template.Template, name string, v any) error {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		return err
	}
	pageHeaders(c.Response().Header())
	return c.HTMLBlob(status, buf.Bytes())
}

// pageForm reads a form post of the page's (actions, login, logout):
// same origin, a form body within the limit, and the CSRF token equal to
// the cookie's. Anything else is a problem, and nothing is done.
func (a *UI) pageForm(c echo.Context) (url.Values, error) {
	r := c.Request()
	if err := crossOrigin.Check(r); err != nil {
		return nil, leasegate.NewError(leasegate.CodeForbidden, "cross-origin form posts are refused")
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil || mt != echo.MIMEApplicationForm {
		return nil, leasegate.NewError(leasegate.CodeUnsupportedMedia,
			"the ops page posts application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, a.cfg.BodyLimit)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, handlers.TooLarge(a.cfg.BodyLimit)
		}
		return nil, leasegate.NewError(leasegate.CodeMalformed, "malformed form")
	}
	form := r.PostForm
	ck, err := c.Cookie(csrfCookie)
	tok := form.Get("csrf")
	if err != nil || !validToken(ck.Value) || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(tok)) != 1 {
		return nil, leasegate.NewError(leasegate.CodeForbidden,
			"missing or wrong CSRF token: reload the ops page and try again")
	}
	return form, nil
}

// opsAction handles a form post of the page: checks origin and token,
// validates, acts, and redirects back to the page (post/redirect/get).
func (a *UI) opsAction(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		form, err := a.pageForm(c)
		if err != nil {
			return err
		}
		user := form.Get("user_id")
		lock := form.Get("lock")
		if lock != "" && !leasegate.UserLockName.MatchString(lock) {
			lock = ""
		}
		invalid := handlers.CheckUserID(user)
		var length time.Duration
		var reason string
		if action == "ban" {
			reason = form.Get("reason")
			var err error
			length, err = handlers.CheckBan(form.Get("seconds"), reason)
			invalid = errors.Join(invalid, err)
		}
		back := func(msg string) error {
			return c.Redirect(http.StatusSeeOther, pageURL("/ops/", "lock", lock, "msg", msg, "user", user))
		}
		if invalid != nil {
			return back("invalid")
		}
		ctx, cancel := a.opContext(c)
		defer cancel()
		svc, tenant, meta := a.deps.Flags, handlers.Principal(c).Tenant, handlers.RequestMeta(c)
		var msg string
		switch action {
		case "clear":
			err, msg = svc.ClearFlags(ctx, tenant, user, meta), "cleared"
		case "ban":
			_, err = svc.BanUser(ctx, tenant, user, length, reason, meta)
			msg = "banned"
		case "unban":
			err, msg = svc.Unban(ctx, tenant, user, meta), "unbanned"
		}
		switch {
		case errors.Is(err, leasegate.ErrUserNotFound):
			return back("notfound")
		case errors.Is(err, leasegate.ErrAllowlisted):
			return back("allowlisted")
		case err != nil:
			a.log.Warn("ops page action failed", zap.String("action", action), zap.Error(err))
			return err
		}
		return back(msg)
	}
}
