package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// Seeing and acting on locks (docs/api.md, docs/operations.md): the
// listing, forced releases, the audit trail and the events of a resource.

// DefaultEventsHeartbeat is how often an event stream sends a comment
// line when nothing happens (the contract: at least every 15 s).
const DefaultEventsHeartbeat = 15 * time.Second

// heldJSONItem is HELD in the contract: LOCK and its waiters.
type heldJSONItem struct {
	lockJSON
	Waiters int `json:"waiters"`
}

func toHeldJSONItem(h leasegate.HeldLock) heldJSONItem {
	return heldJSONItem{lockJSON: toLockJSON(h.Lock), Waiters: h.Waiters}
}

type auditJSON struct {
	At        string                 `json:"at"`
	Actor     string                 `json:"actor"`
	Action    string                 `json:"action"`
	Target    string                 `json:"target"`
	Reason    string                 `json:"reason"`
	Details   leasegate.AuditDetails `json:"details"`
	RequestID string                 `json:"request_id"`
}

func toAuditJSON(r leasegate.AuditRecord) auditJSON {
	return auditJSON{At: leasegate.FormatTime(r.At), Actor: r.Actor, Action: r.Action,
		Target: r.Target, Reason: r.Reason, Details: r.Details, RequestID: r.RequestID}
}

type releasedJSON struct {
	Released lockJSON `json:"released"`
}

// eventJSON is the data of an event: LOCK and at.
type eventJSON struct {
	lockJSON
	At string `json:"at"`
}

// pageJSON is one page of a listing: its items and the cursor of the
// next page (null on the last).
type pageJSON[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// toPageJSON is the page of items (converted by conv) whose next page
// starts at cursor next ("" on the last page).
func toPageJSON[T, J any](items []T, next string, conv func(T) J) pageJSON[J] {
	return pageJSON[J]{Items: toJSONList(items, conv), NextCursor: cursorJSON(next)}
}

// toJSONList converts each of items with conv; none is [], never null.
func toJSONList[T, J any](items []T, conv func(T) J) []J {
	out := make([]J, 0, len(items))
	for _, it := range items {
		out = append(out, conv(it))
	}
	return out
}

func cursorJSON(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// registerOperator adds the operator routes when their services are given.
func (a *API) registerOperator(e *echo.Echo, client, ops []echo.MiddlewareFunc) {
	if a.deps.Operator != nil {
		e.GET("/locks", Wrap(a.listLocks, ops...))
		e.GET("/locks/:resource/events", Wrap(a.lockEvents, client...))
	}
	if a.deps.Audit != nil {
		e.GET("/audit", Wrap(a.listAudit, ops...))
	}
}

// oneQuery reads query parameter k given at most once.
func oneQuery(q url.Values, ck *checker, k string) (string, bool) {
	v, ok := q[k]
	if !ok {
		return "", false
	}
	if len(v) != 1 {
		ck.fail(k, "given more than once")
		return "", false
	}
	return v[0], true
}

// pageLimit reads ?limit= (1..MaxLockPageSize, default DefaultLockPageSize).
func pageLimit(q url.Values, ck *checker) int {
	v, ok := oneQuery(q, ck, "limit")
	if !ok {
		return leasegate.DefaultLockPageSize
	}
	return limitValue(ck, v, leasegate.MaxLockPageSize)
}

// pageCursor reads ?cursor=: when given, a non-empty string of at most
// most bytes (a next_cursor of a previous page).
func pageCursor(q url.Values, ck *checker, most int) string {
	v, ok := oneQuery(q, ck, "cursor")
	if ok && (v == "" || len(v) > most) {
		ck.fail("cursor", "must be a next_cursor from a previous page")
	}
	return v
}

// limitValue checks a given ?limit= value: an integer from 1 to most.
func limitValue(ck *checker, v string, most int) int {
	n, err := strconv.Atoi(v)
	if err != nil || !isIntLiteral(v) || n < 1 || n > most {
		ck.fail("limit", "must be an integer from 1 to "+strconv.Itoa(most))
	}
	return n
}

func (a *API) listLocks(c echo.Context) error {
	var ck checker
	onlyQuery(&ck, c.QueryParams(), "prefix", "limit", "cursor", "kind")
	q := c.QueryParams()
	kind, _ := oneQuery(q, &ck, "kind")
	if kind != "" && kind != "locks" && kind != "elections" {
		ck.fail("kind", "must be locks or elections")
	}
	prefix, _ := oneQuery(q, &ck, "prefix")
	if len(prefix) > 255 || hasControl(prefix) {
		ck.fail("prefix", "must be at most 255 bytes without control characters")
	}
	limit := pageLimit(q, &ck)
	cursor := pageCursor(q, &ck, 255)
	if err := ck.err(); err != nil {
		return err
	}
	if kind == "elections" {
		return a.listElections(c, prefix, cursor, limit)
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Operator.List(ctx, tenantOf(c), prefix, cursor, limit)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, toPageJSON(page.Items, page.NextCursor, toHeldJSONItem))
}

// forceRelease is DELETE /locks/{resource}?force=true (ops): the release
// route hands it every request with force=true (any other force value is
// an unknown parameter of a plain release).
func (a *API) forceRelease(c echo.Context, q url.Values) error {
	if a.deps.Operator == nil {
		return leasegate.NewError(leasegate.CodeNotFound, "forced releases are not served here")
	}
	if !Principal(c).Role.Allows(leasegate.RoleOps) {
		return leasegate.NewError(leasegate.CodeForbidden, "only an ops key may force a release")
	}
	fields, err := a.readFields(c, "reason")
	if err != nil {
		return err
	}
	var ck checker
	resource := nameParam(c, &ck, "resource")
	onlyQuery(&ck, q, "force", "reason")
	if f, _ := oneQuery(q, &ck, "force"); f != "true" {
		ck.fail("force", "must be true")
	}
	reason := claimReason(&ck, fields, q)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	lk, err := a.deps.Operator.ForceRelease(ctx, tenantOf(c), resource, reason, RequestMeta(c))
	if err != nil {
		return err
	}
	a.m.ObserveForceRelease(resource, time.Since(lk.AcquiredAt))
	return sendJSON(c, http.StatusOK, releasedJSON{Released: toLockJSON(lk)})
}

func (a *API) listAudit(c echo.Context) error {
	var ck checker
	onlyQuery(&ck, c.QueryParams(), "limit", "cursor")
	q := c.QueryParams()
	limit := pageLimit(q, &ck)
	cursor := pageCursor(q, &ck, 64)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Audit.List(ctx, tenantOf(c), cursor, limit)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, toPageJSON(page.Items, page.NextCursor, toAuditJSON))
}

// lockEvents is GET /locks/{resource}/events: a Server-Sent Events stream
// of the resource's changes. One goroutine (the watcher) and a channel of
// eventBuffer events per connection; the watcher blocks while the client
// reads slowly, so memory stays bounded. Both end when the client goes.
func (a *API) lockEvents(c echo.Context) error {
	var ck checker
	resource := nameParam(c, &ck, "resource")
	onlyQuery(&ck, c.QueryParams())
	if err := ck.err(); err != nil {
		return err
	}
	tenant := tenantOf(c)
	return streamEvents(a, c, func(ctx context.Context, events chan<- leasegate.LockEvent) error {
		return a.deps.Operator.Watch(ctx, tenant, resource, events)
	}, writeEvent)
}

// streamEvents answers an event stream (locks' and elections'): watch
// runs in its own goroutine and sends on a channel of eventBuffer
// events; the first becomes the 200 (a store error before it is a
// problem), each later one is written with write. Both end when the
// client goes.
func streamEvents[T any](a *API, c echo.Context, watch func(ctx context.Context, events chan<- T) error, write func(w *echo.Response, ev T) error) error {
	ctx, cancel := context.WithCancel(c.Request().Context())
	events := make(chan T, eventBuffer)
	done := make(chan error, 1)
	go func() { done <- watch(ctx, events) }()
	defer func() {
		cancel()
		<-done // the watcher has cleaned up when the handler returns
	}()

	var first T
	select {
	case first = <-events:
	case err := <-done:
		done <- nil
		if err == nil {
			return clientGone()
		}
		return err
	}
	// A stream outlives the server's write timeout; each write instead has
	// eventWriteTimeout, so a client that stops reading is let go.
	rc := http.NewResponseController(c.Response())
	deadline := func() { _ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout)) }
	deadline()
	w := c.Response()
	h := w.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := write(w, first); err != nil {
		return nil
	}
	beat := a.cfg.EventsHeartbeat
	if beat <= 0 {
		beat = DefaultEventsHeartbeat
	}
	hb := time.NewTicker(beat)
	defer hb.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-done:
			done <- nil
			switch {
			case errors.Is(err, leasegate.ErrShuttingDown):
				// The gateway is going away: the client reconnects at
				// once (through another gateway) and reads state.
				_, _ = w.Write([]byte("event: reconnect\ndata: null\n\n"))
				w.Flush()
			case err != nil:
				// The store failed: say so and end; the client reconnects.
				_, _ = w.Write([]byte("event: error\ndata: {\"type\":\"" + api.ProblemBase + string(leasegate.CodeUnavailable) + "\"}\n\n"))
				w.Flush()
			}
			return nil
		case ev := <-events:
			deadline()
			if err := write(w, ev); err != nil {
				return nil
			}
		case <-hb.C:
			deadline()
			if _, err := w.Write([]byte(": heartbeat\n\n")); err != nil {
				return nil
			}
			w.Flush()
		}
	}
}

// eventBuffer is how many events may wait for a slow client.
const eventBuffer = 8

// eventWriteTimeout bounds each write of an event stream: a client that
// reads nothing for that long is disconnected.
const eventWriteTimeout = 30 * time.Second

func writeEvent(w *echo.Response, ev leasegate.LockEvent) error {
	var data []byte
	if ev.Lock == nil {
		data = []byte("null")
	} else {
		var err error
		data, err = json.Marshal(eventJSON{lockJSON: toLockJSON(*ev.Lock), At: leasegate.FormatTime(ev.At)})
		if err != nil {
			return err
		}
	}
	return writeSSE(w, string(ev.Kind), data)
}

// writeSSE writes one event of a stream and flushes it.
func writeSSE(w *echo.Response, kind string, data []byte) error {
	buf := make([]byte, 0, len(data)+32)
	buf = append(buf, "event: "...)
	buf = append(buf, kind...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := w.Write(buf); err != nil {
		return err
	}
	w.Flush()
	return nil
}
