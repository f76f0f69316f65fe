package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// Leader election (docs/elections.md): POST /elections/{name}/campaign,
// POST /elections/{name}/proclaim, DELETE /elections/{name} (resign),
// GET /elections/{name} and GET /elections/{name}/events.

// leaderJSON is LEADER in the contract.
type leaderJSON struct {
	Name      string `json:"name"`
	Candidate string `json:"candidate"`
	Value     string `json:"value"`
	Term      int64  `json:"term"`
	ElectedAt string `json:"elected_at"`
	ExpiresAt string `json:"expires_at"`
}

func toLeaderJSON(l leasegate.Leader) leaderJSON {
	return leaderJSON{
		Name: l.Name, Candidate: l.Candidate, Value: l.Value, Term: l.Term,
		ElectedAt: leasegate.FormatTime(l.ElectedAt),
		ExpiresAt: leasegate.FormatTime(l.ExpiresAt),
	}
}

type electedJSON struct {
	Leader     bool       `json:"leader"`
	Leadership leaderJSON `json:"leadership"`
}

type notElectedJSON struct {
	Leader       bool        `json:"leader"`
	Current      *leaderJSON `json:"current"`
	RetryAfterMS int64       `json:"retry_after_ms"`
}

type leadershipJSON struct {
	Leadership leaderJSON `json:"leadership"`
}

// leaderEventJSON is an event's data: LEADER with `at`.
type leaderEventJSON struct {
	leaderJSON
	At string `json:"at"`
}

// heldElectionJSON is an election in GET /locks?kind=elections: LEADER
// and the campaigns waiting.
type heldElectionJSON struct {
	leaderJSON
	Waiters int `json:"waiters"`
}

func toHeldElectionJSON(h leasegate.HeldElection) heldElectionJSON {
	return heldElectionJSON{leaderJSON: toLeaderJSON(h.Leader), Waiters: h.Waiters}
}

func (a *API) registerElections(e *echo.Echo, client []echo.MiddlewareFunc) {
	if a.deps.Elections == nil {
		return
	}
	e.POST("/elections/:name/campaign", Wrap(a.campaign, client...))
	e.POST("/elections/:name/proclaim", Wrap(a.proclaim, client...))
	e.DELETE("/elections/:name", Wrap(a.resign, client...))
	e.GET("/elections/:name", Wrap(a.leader, client...))
	e.GET("/elections/:name/events", Wrap(a.electionEvents, client...))
}

// candidateField reads the required candidate member (the owner rules).
func candidateField(ck *checker, fields map[string]json.RawMessage) string {
	if s, ok := ck.stringField(fields, "candidate", true); ok {
		return ck.owner("candidate", s)
	}
	return ""
}

// valueField reads the value member: 0..MaxLeaderValue bytes of UTF-8.
func valueField(ck *checker, fields map[string]json.RawMessage, required bool) string {
	s, ok := ck.stringField(fields, "value", required)
	if !ok {
		return ""
	}
	switch {
	case len(s) > leasegate.MaxLeaderValue:
		ck.fail("value", "must be at most "+strconv.Itoa(leasegate.MaxLeaderValue)+" bytes")
	case !utf8.ValidString(s):
		ck.fail("value", "must be valid UTF-8")
	}
	return s
}

// termField reads the required term member: a positive integer.
func termField(ck *checker, fields map[string]json.RawMessage) int64 {
	term, _ := ck.intField(fields, "term", 1, 1<<62, true)
	return term
}

func (a *API) campaign(c echo.Context) error {
	fields, err := a.readFields(c, "candidate", "value", "ttl_seconds", "wait_ms", "lock_delay_ms")
	if err != nil {
		return err
	}
	var ck checker
	req := leasegate.CampaignRequest{Name: nameParam(c, &ck, "name")}
	req.Candidate = candidateField(&ck, fields)
	req.Value = valueField(&ck, fields, false)
	req.TTL = a.ttlField(&ck, fields)
	req.Wait = a.waitField(&ck, fields)
	req.LockDelay = a.lockDelayField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	var res leasegate.CampaignResult
	if req.Wait > 0 {
		a.m.ElectionWaiters.Inc()
		res, err = a.deps.Elections.Campaign(c.Request().Context(), tenantOf(c), req)
		a.m.ElectionWaiters.Dec()
		if err != nil && c.Request().Context().Err() != nil {
			a.m.Elections.WithLabelValues("abandoned").Inc()
			return clientGone()
		}
	} else {
		ctx, cancel := a.opContext(c)
		res, err = a.deps.Elections.Campaign(ctx, tenantOf(c), req)
		cancel()
	}
	if err != nil {
		return err
	}
	switch {
	case res.Elected && res.Renewed:
		a.m.Elections.WithLabelValues("renewed").Inc()
	case res.Elected:
		a.m.Elections.WithLabelValues("won").Inc()
	default:
		a.m.Elections.WithLabelValues("lost").Inc()
		if res.Delayed {
			a.m.LockDelayRefusals.WithLabelValues("election").Inc()
		}
	}
	if !res.Elected {
		out := notElectedJSON{RetryAfterMS: max(res.RetryAfter.Milliseconds(), 0)}
		if res.Current != nil {
			cur := toLeaderJSON(*res.Current)
			out.Current = &cur
		}
		return sendJSON(c, http.StatusOK, out)
	}
	return sendJSON(c, http.StatusOK, electedJSON{Leader: true, Leadership: toLeaderJSON(res.Leadership)})
}

func (a *API) proclaim(c echo.Context) error {
	fields, err := a.readFields(c, "candidate", "term", "value")
	if err != nil {
		return err
	}
	var ck checker
	name := nameParam(c, &ck, "name")
	candidate := candidateField(&ck, fields)
	term := termField(&ck, fields)
	value := valueField(&ck, fields, true)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	ld, err := a.deps.Elections.Proclaim(ctx, tenantOf(c), name, candidate, term, value)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, leadershipJSON{Leadership: toLeaderJSON(ld)})
}

func (a *API) resign(c echo.Context) error {
	fields, err := a.readFields(c, "candidate", "term")
	if err != nil {
		return err
	}
	var ck checker
	name := nameParam(c, &ck, "name")
	candidate := candidateField(&ck, fields)
	term := termField(&ck, fields)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	err = a.deps.Elections.Resign(ctx, tenantOf(c), name, candidate, term)
	switch {
	case err == nil:
		a.m.Resignations.WithLabelValues("resigned").Inc()
		return c.NoContent(http.StatusNoContent)
	case leasegate.ErrorCode(err) == leasegate.CodeNotFound:
		a.m.Resignations.WithLabelValues("not_leader").Inc()
	}
	return err
}

func (a *API) leader(c echo.Context) error {
	var ck checker
	name := nameParam(c, &ck, "name")
	onlyQuery(&ck, c.QueryParams())
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	ld, err := a.deps.Elections.Leader(ctx, tenantOf(c), name)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, leadershipJSON{Leadership: toLeaderJSON(ld)})
}

// electionEvents is GET /elections/{name}/events: Server-Sent Events as
// the lock events are (streamEvents).
func (a *API) electionEvents(c echo.Context) error {
	var ck checker
	name := nameParam(c, &ck, "name")
	onlyQuery(&ck, c.QueryParams())
	if err := ck.err(); err != nil {
		return err
	}
	tenant := tenantOf(c)
	return streamEvents(a, c, func(ctx context.Context, events chan<- leasegate.ElectionEvent) error {
		return a.deps.Elections.Observe(ctx, tenant, name, events)
	}, writeElectionEvent)
}

func writeElectionEvent(w *echo.Response, ev leasegate.ElectionEvent) error {
	data := []byte("null")
	if ev.Leader != nil {
		var err error
		data, err = json.Marshal(leaderEventJSON{leaderJSON: toLeaderJSON(*ev.Leader), At: leasegate.FormatTime(ev.At)})
		if err != nil {
			return err
		}
	}
	return writeSSE(w, string(ev.Kind), data)
}

// listElections is GET /locks?kind=elections (ops): the elections with
// a leader, paged as the locks are.
func (a *API) listElections(c echo.Context, prefix, cursor string, limit int) error {
	if a.deps.Elections == nil {
		return leasegate.NewError(leasegate.CodeNotFound, "elections are not served here")
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	page, err := a.deps.Elections.List(ctx, tenantOf(c), prefix, cursor, limit)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, toPageJSON(page.Items, page.NextCursor, toHeldElectionJSON))
}
