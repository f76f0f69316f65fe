package opsui

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/handlers"
	"github.com/leasegate/leasegate/metrics"
)

// The Locks and Audit views of /ops/ (docs/operations.md): the tenant's
// live locks with a forced release confirmed in a second step (no script
// on the page), small charts of the last hour drawn here as inline SVG,
// and the audit trail. Same protections as the abuse review (ops.go):
// the page's authentication, CSRF double submit and same-origin posts.

var opsLocksPages = template.Must(template.New("locks").Funcs(template.FuncMap{
	"visible": visible,
	"short": func(ts string) string {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return ts
		}
		return t.UTC().Format(time.DateTime)
	},
}).ParseFS(opsFiles, "opspage/locks.html", "opspage/paging.html"))

// opsLocksPageSize is how many locks or audit records a page shows.
const opsLocksPageSize = 50

type opsChart struct {
	Name       string
	W, H       int
	Line, Area string
	Total, Max int64
}

type opsLockRow struct {
	Resource, Owner, ExpiresAt, Left string
	Token                            int64
	Waiters                          int
}

// opsElectionRow is an election with a leader on the Locks view.
type opsElectionRow struct {
	Name, Candidate, Value, ExpiresAt, Left string
	Term                                    int64
	Waiters                                 int
}

type opsConfirm struct {
	Resource, Owner, Left, Reason string
	Token                         int64
	Held                          bool
}

type opsAuditRow struct {
	At, Actor, Action, Target, Reason, Details, RequestID string
}

type opsLocksView struct {
	Title, View, Tenant, Operator, CSRF string
	Session, HasAbuse                   bool
	Charts                              []opsChart
	// Gateways is how many gateways' activity the charts sum (Fleet);
	// FleetUnread: Redis could not be read, they are this gateway's.
	Gateways    int
	FleetUnread bool
	Flash       *opsFlash
	Prefix      string
	Locks       []opsLockRow
	// Elections: the elections with a leader whose name starts with
	// Prefix (first page of the view only; GET /locks?kind=elections
	// pages them). MoreElections: there are more than shown.
	Elections                   []opsElectionRow
	HasElections, MoreElections bool
	Audit                       []opsAuditRow
	Confirm                     *opsConfirm
	Paged                       bool
	FirstURL, NextURL           string
	PageSize                    int
}

var opsLocksMessages = map[string]opsFlash{
	"released": {Kind: "ok", Text: "Force-released"},
	"notheld":  {Kind: "error", Text: "Nothing to release: nobody holds"},
	"invalid":  {Kind: "error", Text: "The request was not valid; nothing was changed."},
}

// registerOpsLocks adds the views (with an Operator) to the page.
func (a *UI) registerOpsLocks(e *echo.Echo, authn echo.MiddlewareFunc) {
	page := []echo.MiddlewareFunc{a.pageAuth(authn), handlers.RequireRole(leasegate.RoleOps)}
	// Behind the page's authentication: unlike ops.css, the login form
	// does not need it.
	e.GET("/ops/assets/locks.css", handlers.Wrap(opsAsset("locks.css"), page...))
	e.GET("/ops/locks", handlers.Wrap(a.opsLocks, page...))
	e.POST("/ops/locks/release", handlers.Wrap(a.opsForceRelease, page...))
	if a.deps.Audit != nil {
		e.GET("/ops/audit", handlers.Wrap(a.opsAudit, page...))
	}
}

func (a *UI) opsLocksView(c echo.Context, title, view string) opsLocksView {
	return opsLocksView{
		Title: title, View: view, Tenant: handlers.Principal(c).Tenant, Operator: handlers.Principal(c).Actor(),
		CSRF: a.csrfToken(c), Session: viaSession(c), HasAbuse: a.deps.Flags != nil,
		PageSize: opsLocksPageSize,
	}
}

// left says how long until t, for people: "45s", "12m 5s", "3h 2m".
func left(t, now time.Time) string {
	d := t.Sub(now).Truncate(time.Second)
	switch {
	case d <= 0:
		return "expiring"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60)
}

// charts draws the fleet's last hour (metrics.Activity.Fleet) as
// polylines into v.
func (a *UI) charts(ctx context.Context, v *opsLocksView, now time.Time) {
	series, gateways, err := a.deps.Metrics.Activity().Fleet(ctx, now)
	if err != nil {
		a.deps.Log.Warn("ops page: the fleet's activity could not be read", zap.Error(err))
	}
	v.Gateways, v.FleetUnread = gateways, err != nil
	const w, h = 240, 48
	for i, pts := range series {
		c := opsChart{Name: metrics.ActivityNames[i], W: w, H: h}
		for _, p := range pts {
			c.Total += int64(p)
			c.Max = max(c.Max, int64(p))
		}
		scale := float64(h-2) / float64(max(c.Max, 1))
		var line strings.Builder
		for k, p := range pts {
			x := float64(k) * float64(w) / float64(len(pts)-1)
			y := float64(h) - p*scale
			fmt.Fprintf(&line, "%.1f,%.1f ", x, y)
		}
		c.Line = strings.TrimSpace(line.String())
		c.Area = fmt.Sprintf("0,%d %s %d,%d", h, c.Line, w, h)
		v.Charts = append(v.Charts, c)
	}
}

func (a *UI) opsLocks(c echo.Context) error {
	q := c.QueryParams()
	prefix, cursor, msg := q.Get("prefix"), q.Get("cursor"), q.Get("msg")
	if handlers.CheckListPosition(prefix, cursor) != nil {
		return c.Redirect(http.StatusSeeOther, "/ops/locks?msg=invalid")
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Operator.List(ctx, handlers.Principal(c).Tenant, prefix, cursor, opsLocksPageSize)
	if err != nil {
		return err
	}
	now := time.Now()
	v := a.opsLocksView(c, "locks", "locks")
	v.Prefix, v.Paged, v.FirstURL = prefix, cursor != "", pageURL("/ops/locks", "prefix", prefix)
	a.charts(ctx, &v, now)
	if page.NextCursor != "" {
		v.NextURL = pageURL("/ops/locks", "prefix", prefix, "cursor", page.NextCursor)
	}
	if f, ok := opsLocksMessages[msg]; ok {
		if msg != "invalid" {
			f.User = q.Get("resource")
		}
		v.Flash = &f
	}
	for _, h := range page.Items {
		v.Locks = append(v.Locks, opsLockRow{
			Resource: h.Resource, Owner: h.Owner, Token: h.Token, Waiters: h.Waiters,
			ExpiresAt: leasegate.FormatTime(h.ExpiresAt), Left: left(h.ExpiresAt, now),
		})
	}
	if a.deps.Elections != nil && cursor == "" {
		el, err := a.deps.Elections.List(ctx, handlers.Principal(c).Tenant, prefix, "", opsLocksPageSize)
		if err != nil {
			return err
		}
		v.HasElections, v.MoreElections = true, el.NextCursor != ""
		for _, h := range el.Items {
			v.Elections = append(v.Elections, opsElectionRow{
				Name: h.Name, Candidate: h.Candidate, Value: h.Value, Term: h.Term, Waiters: h.Waiters,
				ExpiresAt: leasegate.FormatTime(h.ExpiresAt), Left: left(h.ExpiresAt, now),
			})
		}
	}
	return render(c, http.StatusOK, opsLocksPages, "locks.html", v)
}

// opsForceRelease is the page's forced release: the first post (from the
// list) shows what would be released and asks again; the second, with
// confirm=yes, releases and goes back to the list.
func (a *UI) opsForceRelease(c echo.Context) error {
	form, err := a.pageForm(c)
	if err != nil {
		return err
	}
	resource, reason := form.Get("resource"), strings.TrimSpace(form.Get("reason"))
	back := func(msg string) error {
		return c.Redirect(http.StatusSeeOther, "/ops/locks?"+url.Values{"msg": {msg}, "resource": {resource}}.Encode())
	}
	if handlers.CheckForceRelease(resource, reason) != nil {
		return c.Redirect(http.StatusSeeOther, "/ops/locks?msg=invalid")
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	if form.Get("confirm") != "yes" {
		v := a.opsLocksView(c, "force release", "locks")
		cf := &opsConfirm{Resource: resource, Reason: reason}
		if lk, err := a.deps.Locks.Status(ctx, handlers.Principal(c).Tenant, resource); err == nil {
			cf.Held, cf.Owner, cf.Token, cf.Left = true, lk.Owner, lk.Token, left(lk.ExpiresAt, time.Now())
		} else if !errors.Is(err, leasegate.ErrLockNotHeld) {
			return err
		}
		v.Confirm = cf
		return render(c, http.StatusOK, opsLocksPages, "confirm.html", v)
	}
	lk, err := a.deps.Operator.ForceRelease(ctx, handlers.Principal(c).Tenant, resource, reason, handlers.RequestMeta(c))
	switch {
	case errors.Is(err, leasegate.ErrLockNotHeld):
		return back("notheld")
	case err != nil:
		a.log.Warn("ops page forced release failed", zap.Error(err))
		return err
	}
	a.deps.Metrics.ObserveForceRelease(resource, time.Since(lk.AcquiredAt))
	return back("released")
}

func (a *UI) opsAudit(c echo.Context) error {
	cursor := c.QueryParam("cursor")
	if len(cursor) > 64 {
		cursor = ""
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Audit.List(ctx, handlers.Principal(c).Tenant, cursor, opsLocksPageSize)
	var de *leasegate.Error
	if errors.As(err, &de) && de.Code == leasegate.CodeValidation {
		return c.Redirect(http.StatusSeeOther, "/ops/audit")
	}
	if err != nil {
		return err
	}
	v := a.opsLocksView(c, "audit trail", "audit")
	v.Paged = cursor != ""
	if page.NextCursor != "" {
		v.NextURL = "/ops/audit?cursor=" + url.QueryEscape(page.NextCursor)
	}
	for _, r := range page.Items {
		v.Audit = append(v.Audit, opsAuditRow{At: leasegate.FormatTime(r.At), Actor: r.Actor, Action: r.Action,
			Target: r.Target, Reason: r.Reason, Details: r.Details.String(), RequestID: r.RequestID})
	}
	return render(c, http.StatusOK, opsLocksPages, "audit.html", v)
}
