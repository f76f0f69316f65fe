package handlers

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
)

// flagJSON is FLAG in the contract.
type flagJSON struct {
	UserID         string  `json:"user_id"`
	Lock           string  `json:"lock"`
	TimesFlagged   int64   `json:"times_flagged"`
	PeakAttempts   int64   `json:"peak_attempts"`
	FirstFlaggedAt string  `json:"first_flagged_at"`
	LastFlaggedAt  string  `json:"last_flagged_at"`
	BannedUntil    *string `json:"banned_until"`
	// AutomaticBans: policy bans of this lock on the user (the n of the
	// escalation), an extension of the contract's FLAG.
	AutomaticBans int64 `json:"automatic_bans"`
	// AttemptsAt is the evidence: the times of the last attempts (at most
	// 50, oldest first) of the window that flagged.
	AttemptsAt []string `json:"attempts_at"`
}

func toFlagJSON(f leasegate.Flag) flagJSON {
	j := flagJSON{
		UserID:         f.UserID,
		Lock:           f.Lock,
		TimesFlagged:   f.TimesFlagged,
		PeakAttempts:   f.PeakAttempts,
		FirstFlaggedAt: leasegate.FormatTime(f.FirstFlaggedAt),
		LastFlaggedAt:  leasegate.FormatTime(f.LastFlaggedAt),
		AutomaticBans:  f.AutomaticBans,
		AttemptsAt:     toJSONList(f.AttemptsAt, leasegate.FormatTime),
	}
	if !f.BannedUntil.IsZero() {
		s := leasegate.FormatTime(f.BannedUntil)
		j.BannedUntil = &s
	}
	return j
}

type banJSON struct {
	UserID      string `json:"user_id"`
	BannedUntil string `json:"banned_until"`
	Reason      string `json:"reason"`
	BannedBy    string `json:"banned_by"`
	Source      string `json:"source"`
	// BannedAt and Lock (the policy's lock, "" for operators) extend the
	// contract's BAN.
	BannedAt string `json:"banned_at,omitempty"`
	Lock     string `json:"lock,omitempty"`
}

func toBanJSON(user string, b leasegate.Ban) *banJSON {
	j := &banJSON{UserID: user, BannedUntil: leasegate.FormatTime(b.Until),
		Reason: b.Reason, BannedBy: b.By, Source: b.Source, Lock: b.Lock}
	if !b.Created.IsZero() {
		j.BannedAt = leasegate.FormatTime(b.Created)
	}
	return j
}

type userFlagsJSON struct {
	UserID string     `json:"user_id"`
	Flags  []flagJSON `json:"flags"`
	// Ban is the user's active ban (an extension of the contract's shape).
	Ban *banJSON `json:"ban"`
}

// listQuery validates ?lock=&limit=&cursor=.
func listQuery(c echo.Context, ck *checker, extra ...string) leasegate.FlagQuery {
	onlyQuery(ck, c.QueryParams(), append([]string{"lock", "limit", "cursor"}, extra...)...)
	q := c.QueryParams()
	var lq leasegate.FlagQuery
	if v, ok := oneQuery(q, ck, "lock"); ok {
		ck.lockName("lock", v)
		lq.Lock = v
	}
	if v, ok := oneQuery(q, ck, "limit"); ok {
		lq.Limit = limitValue(ck, v, leasegate.MaxFlagPageSize)
	}
	lq.Cursor = pageCursor(q, ck, 1024)
	return lq
}

func (a *API) listFlagged(c echo.Context) error {
	var ck checker
	q := listQuery(c, &ck)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	p, err := a.deps.Flags.List(ctx, tenantOf(c), q)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, toPageJSON(p.Items, p.NextCursor, toFlagJSON))
}

// userOnlyParam validates the {user_id} of a route that takes no query.
func userOnlyParam(c echo.Context) (string, error) {
	var ck checker
	user := userIDParam(c, &ck)
	onlyQuery(&ck, c.QueryParams())
	return user, ck.err()
}

func (a *API) getFlagged(c echo.Context) error {
	user, err := userOnlyParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	uf, err := a.deps.Flags.Get(ctx, tenantOf(c), user)
	if err != nil {
		return err
	}
	out := userFlagsJSON{UserID: uf.UserID, Flags: toJSONList(uf.Flags, toFlagJSON)}
	if uf.Ban != nil {
		out.Ban = toBanJSON(uf.UserID, *uf.Ban)
	}
	return sendJSON(c, http.StatusOK, out)
}

func (a *API) clearFlagged(c echo.Context) error {
	return a.operatorAction(c, a.deps.Flags.ClearFlags)
}

// operatorAction runs a bodyless, queryless operator action on the
// {user_id} of the path (clear flags, unban) and answers 204.
func (a *API) operatorAction(c echo.Context, act func(ctx context.Context, tenant, user string, meta leasegate.RequestMeta) error) error {
	if err := a.noBody(c); err != nil {
		return err
	}
	user, err := userOnlyParam(c)
	if err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	if err := act(ctx, tenantOf(c), user, RequestMeta(c)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// banReason validates a ban's reason (JSON body or /ops/ form).
func (c *checker) banReason(reason string) {
	c.text("reason", reason, 256)
}

func (a *API) ban(c echo.Context) error {
	fields, err := a.readFields(c, "seconds", "reason")
	if err != nil {
		return err
	}
	var ck checker
	user := userIDParam(c, &ck)
	onlyQuery(&ck, c.QueryParams())
	seconds, _ := ck.intField(fields, "seconds", 1, int64(leasegate.MaxBan/time.Second), true)
	reason, _ := ck.stringField(fields, "reason", false)
	ck.banReason(reason)
	if err := ck.err(); err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	b, err := a.deps.Flags.BanUser(ctx, tenantOf(c), user, time.Duration(seconds)*time.Second, reason, RequestMeta(c))
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusCreated, toBanJSON(user, b))
}

func (a *API) unban(c echo.Context) error {
	return a.operatorAction(c, a.deps.Flags.Unban)
}

type deadLetterJSON struct {
	ID       string          `json:"id"`
	Type     string          `json:"type"`
	URL      string          `json:"url"`
	Tries    int64           `json:"tries"`
	Error    string          `json:"error"`
	FailedAt string          `json:"failed_at"`
	Event    json.RawMessage `json:"event"`
}

func toDeadLetterJSON(d leasegate.DeadLetter) deadLetterJSON {
	ev := json.RawMessage(d.Event)
	if !json.Valid(ev) {
		ev = json.RawMessage("null")
	}
	return deadLetterJSON{ID: d.EventID, Type: d.Type, URL: d.URL,
		Tries: d.Tries, Error: d.Error, FailedAt: leasegate.FormatTime(d.FailedAt), Event: ev}
}

type webhookStatusJSON struct {
	Enabled       bool             `json:"enabled"`
	OutboxEntries int64            `json:"outbox_entries"`
	Pending       int64            `json:"pending"`
	DeadLetters   []deadLetterJSON `json:"dead_letters"`
}

// webhookStatus is GET /abuse/webhooks?limit=N: the outbox's depth and
// the caller's tenant's dead letters, newest first.
func (a *API) webhookStatus(c echo.Context) error {
	var ck checker
	onlyQuery(&ck, c.QueryParams(), "limit")
	limit := 0
	if v, ok := oneQuery(c.QueryParams(), &ck, "limit"); ok {
		limit = limitValue(&ck, v, leasegate.MaxDeadLetterPageSize)
	}
	if err := ck.err(); err != nil {
		return err
	}
	out := webhookStatusJSON{DeadLetters: []deadLetterJSON{}}
	if a.deps.Webhooks != nil {
		ctx, cancel := a.opContext(c)
		defer cancel()
		st, err := a.deps.Webhooks.Status(ctx, tenantOf(c), limit)
		if err != nil {
			return err
		}
		out.Enabled, out.OutboxEntries, out.Pending = st.Enabled, st.OutboxEntries, st.Pending
		out.DeadLetters = toJSONList(st.DeadLetters, toDeadLetterJSON)
	}
	return sendJSON(c, http.StatusOK, out)
}

// backtest is POST /abuse/backtest: a candidate policy replayed over the
// lock's attempt log (docs/abuse.md, "Backtesting a policy").
func (a *API) backtest(c echo.Context) error {
	fields, err := a.readFields(c, "lock", "policy", "since", "until", "users", "limit", "cursor")
	if err != nil {
		return err
	}
	var ck checker
	onlyQuery(&ck, c.QueryParams())
	q, err := backtestQuery(&ck, fields)
	if err != nil {
		return err
	}
	ctx, cancel := a.opContext(c)
	defer cancel()
	bt, err := a.deps.Backtests.Backtest(ctx, tenantOf(c), q)
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, bt)
}

// backtestQuery reads a backtest's fields (the JSON body): their JSON
// types and the user ids. abuse.Service.Backtest checks the rest (lock,
// policy, range, page, cursor), for this route and the /ops/ "What if"
// page (opsui/whatif.go) alike.
func backtestQuery(ck *checker, fields map[string]json.RawMessage) (leasegate.BacktestQuery, error) {
	var q leasegate.BacktestQuery
	q.Lock, _ = ck.stringField(fields, "lock", true)
	if raw, ok := fields["policy"]; ok {
		if len(raw) == 0 || raw[0] != '{' {
			ck.fail("policy", "must be an object of policy-file fields")
		}
		q.Policy = raw
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if v, ok := ck.stringField(fields, f.name, false); ok {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				ck.fail(f.name, "must be an RFC 3339 time")
			}
			*f.to = t
		}
	}
	if raw, ok := fields["users"]; ok {
		if err := json.Unmarshal(raw, &q.Users); err != nil {
			ck.fail("users", "must be an array of user ids")
		}
		for _, u := range q.Users {
			ck.userID(u)
		}
	}
	if n, ok := ck.intField(fields, "limit", math.MinInt32, math.MaxInt32, false); ok {
		q.Limit = int(n)
	}
	q.Cursor, _ = ck.stringField(fields, "cursor", false)
	return q, ck.err()
}
