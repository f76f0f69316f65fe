package handlers

import (
	"bytes"
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
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
)

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
	// short shows a contract timestamp as "2026-11-30 09:30:00" (UTC).
	"short": func(ts string) string {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return ts
		}
		return t.UTC().Format(time.DateTime)
	},
}).ParseFS(opsFiles, "opspage/page.html"))

var loginPage = template.Must(template.ParseFS(opsFiles, "opspage/login.html"))

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
}

type opsFlash struct {
	Kind string // "ok" or "error"
	Text string
	User string
}

type opsView struct {
	Tenant   string
	Operator string
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
func (a *API) registerOps(e *echo.Echo, authn echo.MiddlewareFunc) {
	page := []echo.MiddlewareFunc{a.pageAuth(authn), requireRole(leasegate.RoleOps)}
	e.GET("/ops", func(c echo.Context) error {
		return c.Redirect(http.StatusMovedPermanently, "/ops/")
	})
	e.GET("/ops/assets/ops.css", a.opsAsset)
	e.GET("/ops/", a.opsPage, page...)
	e.POST("/ops/clear", a.opsAction("clear"), page...)
	e.POST("/ops/ban", a.opsAction("ban"), page...)
	e.POST("/ops/unban", a.opsAction("unban"), page...)
	if a.deps.Auth == nil || a.deps.Sessions != nil {
		e.GET("/ops/login", a.loginForm)
		e.POST("/ops/login", a.loginSubmit)
		e.POST("/ops/logout", a.logout)
	}
}

func (a *API) opsAsset(c echo.Context) error {
	b, err := fs.ReadFile(opsFiles, "opspage/ops.css")
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-cache")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", b)
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
func (a *API) csrfToken(c echo.Context) string {
	if ck, err := c.Cookie(csrfCookie); err == nil && validToken(ck.Value) {
		return ck.Value
	}
	return a.newCSRFToken(c)
}

// newCSRFToken sets a fresh CSRF cookie and returns its value.
func (a *API) newCSRFToken(c echo.Context) string {
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

func (a *API) opsPage(c echo.Context) error {
	var ck checker
	q := listQuery(c, &ck, "msg", "user")
	msg := c.QueryParam("msg")
	user := c.QueryParam("user")
	if err := ck.err(); err != nil {
		// A hand-edited URL: show the first page rather than JSON.
		return c.Redirect(http.StatusSeeOther, "/ops/?msg=invalid")
	}
	q.Limit = opsPageSize
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Flags.List(ctx, tenantOf(c), q)
	if errors.Is(err, leasegate.ErrBadCursor) {
		return c.Redirect(http.StatusSeeOther, "/ops/?msg=invalid")
	}
	if err != nil {
		return err
	}
	v := opsView{
		Tenant:   tenantOf(c),
		Operator: principal(c).Actor(),
		Lock:     q.Lock,
		CSRF:     a.csrfToken(c),
		Session:  viaSession(c),
		Paged:    q.Cursor != "",
		FirstURL: opsURL(q.Lock, "", "", ""),
		PageSize: opsPageSize,
	}
	if page.NextCursor != "" {
		v.NextURL = opsURL(q.Lock, page.NextCursor, "", "")
	}
	if f, ok := opsMessages[msg]; ok {
		if msg != "invalid" {
			f.User = user
		}
		v.Flash = &f
	}
	for _, f := range page.Items {
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
		}
		v.Items = append(v.Items, r)
	}
	var buf bytes.Buffer
	if err := opsPage.Execute(&buf, v); err != nil {
		return err
	}
	pageHeaders(c.Response().Header())
	return c.HTMLBlob(http.StatusOK, buf.Bytes())
}

func opsURL(lock, cursor, msg, user string) string {
	q := url.Values{}
	if lock != "" {
		q.Set("lock", lock)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if msg != "" {
		q.Set("msg", msg)
		q.Set("user", user)
	}
	if len(q) == 0 {
		return "/ops/"
	}
	return "/ops/?" + q.Encode()
}

// pageForm reads a form post of the page's (actions, login, logout):
// same origin, a form body within the limit, and the CSRF token equal to
// the cookie's. Anything else is a problem, and nothing is done.
func (a *API) pageForm(c echo.Context) (url.Values, error) {
	r := c.Request()
	if err := crossOrigin.Check(r); err != nil {
		return nil, problem(leasegate.CodeForbidden, "cross-origin form posts are refused")
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil || mt != echo.MIMEApplicationForm {
		return nil, problem(leasegate.CodeUnsupportedMedia,
			"the ops page posts application/x-www-form-urlencoded")
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, a.cfg.BodyLimit)
	if err := r.ParseForm(); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(a.cfg.BodyLimit)
		}
		return nil, problem(leasegate.CodeMalformed, "malformed form")
	}
	form := r.PostForm
	ck, err := c.Cookie(csrfCookie)
	tok := form.Get("csrf")
	if err != nil || !validToken(ck.Value) || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(tok)) != 1 {
		return nil, problem(leasegate.CodeForbidden,
			"missing or wrong CSRF token: reload the ops page and try again")
	}
	return form, nil
}

// opsAction handles a form post of the page: checks origin and token,
// validates, acts, and redirects back to the page (post/redirect/get).
func (a *API) opsAction(action string) echo.HandlerFunc {
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
		var v checker
		v.userID(user)
		var seconds int64
		var reason string
		if action == "ban" {
			seconds, err = strconv.ParseInt(form.Get("seconds"), 10, 64)
			if err != nil || !isIntLiteral(form.Get("seconds")) || seconds < 1 || seconds > int64(leasegate.MaxBan/time.Second) {
				v.fail("seconds", "must be a whole number of seconds up to a year")
			}
			reason = form.Get("reason")
			v.banReason(reason)
		}
		back := func(msg string) error {
			return c.Redirect(http.StatusSeeOther, opsURL(lock, "", msg, user))
		}
		if v.err() != nil {
			return back("invalid")
		}
		ctx, cancel := a.opContext(c)
		defer cancel()
		svc, tenant, meta := a.deps.Flags, tenantOf(c), requestMeta(c)
		var msg string
		switch action {
		case "clear":
			err, msg = svc.ClearFlags(ctx, tenant, user, meta), "cleared"
		case "ban":
			_, err = svc.BanUser(ctx, tenant, user, time.Duration(seconds)*time.Second, reason, meta)
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
