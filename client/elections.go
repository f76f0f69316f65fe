package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
)

// Leader election (docs/elections.md), as etcd's concurrency.Election:
// Campaign, Proclaim, Resign, Leader and Observe.

// Leader is an election's leadership (the domain's type).
type Leader = leasegate.Leader

// NotElectedError is Campaign's answer when another candidate leads (or
// a lock delay runs) and any wait ended. errors.Is(err, ErrNotAcquired)
// is true.
type NotElectedError struct {
	Name string
	// Current is the sitting leader, nil when there is none (a lock delay).
	Current *Leader
	// RetryAfter is how long until the leadership may be free.
	RetryAfter time.Duration
}

func (e *NotElectedError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("leasegate: election %q: not elected; retry after %v", e.Name, e.RetryAfter)
	}
	return fmt.Sprintf("leasegate: election %q is led by %q (term %d); retry after %v", e.Name, e.Current.Candidate, e.Current.Term, e.RetryAfter)
}

// Is makes errors.Is(err, ErrNotAcquired) true.
func (e *NotElectedError) Is(target error) bool { return target == ErrNotAcquired }

type leaderJSON struct {
	Name      string    `json:"name"`
	Candidate string    `json:"candidate"`
	Value     string    `json:"value"`
	Term      int64     `json:"term"`
	ElectedAt time.Time `json:"elected_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (j leaderJSON) leader() Leader {
	return Leader{Name: j.Name, Candidate: j.Candidate, Value: j.Value, Term: j.Term,
		ElectedAt: j.ElectedAt.UTC(), ExpiresAt: j.ExpiresAt.UTC()}
}

func electionPath(name string) string { return "/elections/" + url.PathEscape(name) }

// Campaign asks for the leadership of req.Name for req.Candidate, with
// req.Value proclaimed, for req.TTL (whole seconds). With req.Wait it
// queues (FIFO) up to that long. It returns the leadership (the sitting
// leader campaigning again keeps its term: that is how a leader renews),
// or a *NotElectedError (errors.Is ErrNotAcquired). Unanswered attempts
// are retried: a campaign of the same candidate is idempotent.
func (c *Client) Campaign(ctx context.Context, req leasegate.CampaignRequest) (Leader, error) {
	body, err := campaignBody(req)
	if err != nil {
		return Leader{}, err
	}
	ld, _, err := c.campaign(ctx, body, req.Name, true)
	return ld, err
}

// campaign sends one campaign (retried when retry is set) and returns the
// leadership and when the request that won it was sent.
func (c *Client) campaign(ctx context.Context, body map[string]any, name string, retry bool) (Leader, time.Time, error) {
	var out campaignAnswer
	var sent time.Time
	var err error
	if retry {
		_, sent, err = c.call(ctx, http.MethodPost, electionPath(name)+"/campaign", body, &out)
	} else {
		sent = time.Now()
		_, err = c.do(ctx, http.MethodPost, electionPath(name)+"/campaign", body, &out)
	}
	if err != nil {
		return Leader{}, sent, err
	}
	if !out.Leader {
		e := &NotElectedError{Name: name, RetryAfter: time.Duration(out.RetryAfterMS) * time.Millisecond}
		if out.Current != nil {
			cur := out.Current.leader()
			e.Current = &cur
		}
		return Leader{}, sent, e
	}
	return out.Leadership.leader(), sent, nil
}

type campaignAnswer struct {
	Leader       bool        `json:"leader"`
	Leadership   leaderJSON  `json:"leadership"`
	Current      *leaderJSON `json:"current"`
	RetryAfterMS int64       `json:"retry_after_ms"`
}

// reset clears a previous attempt's answer (call decodes into it again).
func (a *campaignAnswer) reset() { *a = campaignAnswer{} }

// Lead campaigns (as Campaign, waiting up to req.Wait) and, once
// elected, keeps the leadership: a KeepAlive that campaigns again every
// TTL/3 (opts change that), keeping the term. Its Done closes, with an
// ErrLeaseLost error, as soon as a renewal finds another leader or a new
// term, or renewals keep failing until the leadership is within the loss
// margin of its end by the local clock (counted from when the winning
// request was sent), so work can stop while it is still the leader's.
// The KeepAlive's Lease carries the name (Resource), the candidate
// (Owner) and the term (Token). It lives on after ctx ends (ctx bounds
// the campaign only): Stop it, then Resign.
func (c *Client) Lead(ctx context.Context, req leasegate.CampaignRequest, opts ...KeepAliveOption) (Leader, *KeepAlive, error) {
	body, err := campaignBody(req)
	if err != nil {
		return Leader{}, nil, err
	}
	ld, sent, err := c.campaign(ctx, body, req.Name, true)
	if err != nil {
		return Leader{}, nil, err
	}
	renew := func(ctx context.Context, l *Lease, ttl time.Duration, retry bool) (*Lease, error) {
		b, err := campaignBody(leasegate.CampaignRequest{Name: req.Name, Candidate: req.Candidate, Value: req.Value, TTL: ttl, LockDelay: req.LockDelay})
		if err != nil {
			return nil, err
		}
		nl, sent, err := c.campaign(ctx, b, req.Name, retry)
		if err != nil {
			return nil, err
		}
		if nl.Term != l.Token {
			// Elected again under a new term: the old term ended.
			return nil, &NotElectedError{Name: req.Name, Current: &nl}
		}
		return leadershipLease(nl, ttl, sent), nil
	}
	return ld, c.keepAlive(context.WithoutCancel(ctx), leadershipLease(ld, req.TTL, sent), renew, opts...), nil
}

// leadershipLease is a leadership as the Lease a KeepAlive keeps.
func leadershipLease(ld Leader, ttl time.Duration, sent time.Time) *Lease {
	return &Lease{Resource: ld.Name, Owner: ld.Candidate, Token: ld.Term, AcquiredAt: ld.ElectedAt,
		ExpiresAt: ld.ExpiresAt, TTL: ttl, localExpiry: sent.Add(ttl)}
}

// campaignBody is the body of a campaign for req.
func campaignBody(req leasegate.CampaignRequest) (map[string]any, error) {
	secs, err := ttlSeconds(req.TTL)
	if err != nil {
		return nil, err
	}
	if req.Wait < 0 {
		return nil, invalid("wait", fmt.Sprintf("%v must not be negative", req.Wait))
	}
	if req.LockDelay < 0 {
		return nil, invalid("lock_delay", fmt.Sprintf("%v must not be negative", req.LockDelay))
	}
	body := map[string]any{"candidate": req.Candidate, "value": req.Value, "ttl_seconds": secs}
	if req.Wait > 0 {
		body["wait_ms"] = req.Wait.Milliseconds()
	}
	if req.LockDelay > 0 {
		body["lock_delay_ms"] = req.LockDelay.Milliseconds()
	}
	return body, nil
}

// Proclaim sets the value of the leadership ld (its candidate and term).
// leasegate.ErrNotLeader (and ErrNotFound) unless it still leads.
func (c *Client) Proclaim(ctx context.Context, ld Leader, value string) (Leader, error) {
	var out struct {
		Leadership leaderJSON `json:"leadership"`
	}
	body := map[string]any{"candidate": ld.Candidate, "term": ld.Term, "value": value}
	if _, _, err := c.call(ctx, http.MethodPost, electionPath(ld.Name)+"/proclaim", body, &out); err != nil {
		return Leader{}, answerFor(err, leasegate.ErrNotLeader)
	}
	return out.Leadership.leader(), nil
}

// Resign ends the leadership ld at once (no lock delay), waking the next
// queued candidate. leasegate.ErrNotLeader (and ErrNotFound) unless it
// still leads; as with Release, a retry after an unanswered first attempt
// that finds nothing counts as resigned.
func (c *Client) Resign(ctx context.Context, ld Leader) error {
	return answerFor(c.release(ctx, electionPath(ld.Name), map[string]any{"candidate": ld.Candidate, "term": ld.Term}),
		leasegate.ErrNotLeader)
}

// Leader returns the leadership of name, or leasegate.ErrNoLeader (and
// ErrNotFound).
func (c *Client) Leader(ctx context.Context, name string) (Leader, error) {
	var out struct {
		Leadership leaderJSON `json:"leadership"`
	}
	if _, _, err := c.call(ctx, http.MethodGet, electionPath(name), nil, &out); err != nil {
		return Leader{}, answerFor(err, leasegate.ErrNoLeader)
	}
	return out.Leadership.leader(), nil
}

// ElectionEvent is one change of an election (ObserveEvents).
type ElectionEvent = leasegate.ElectionEvent

// ObserveEvents streams the events of election name to fn (state first,
// then elected, proclaimed, resigned, expired) until ctx ends (nil), fn
// returns an error (that error) or the stream fails or ends (an error;
// leasegate.ErrShuttingDown when the gateway asked the client to
// reconnect: it is shutting down). It uses the Client's transport
// without its timeout.
func (c *Client) ObserveEvents(ctx context.Context, name string, fn func(ElectionEvent) error) error {
	return c.events(ctx, electionPath(name)+"/events", "observe "+name, "election "+name, func(kind, data string) error {
		ev := ElectionEvent{Kind: leasegate.ElectionEventKind(kind)}
		if data != "null" {
			var v struct {
				leaderJSON
				At time.Time `json:"at"`
			}
			if err := json.Unmarshal([]byte(data), &v); err != nil {
				return fmt.Errorf("leasegate: observe %s: event %s: %w", name, kind, err)
			}
			ld := v.leader()
			ev.Leader, ev.At = &ld, v.At.UTC()
		}
		return fn(ev)
	})
}

// events reads the server-sent events at path (a lock's or an election's,
// named what in errors and stream in the error event's text) and gives
// each event's kind and data to fn, until ctx ends (nil), fn returns an
// error (that error) or the stream fails. It uses the Client's transport
// without its timeout.
func (c *Client) events(ctx context.Context, path, what, stream string, fn func(kind, data string) error) error {
	req, err := c.newRequest(ctx, http.MethodGet, path, nil, "text/event-stream")
	if err != nil {
		return err
	}
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("leasegate: %s: %w", what, noAnswerError{err})
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return answerError(resp, data)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 16<<10), 64<<10) // an election's value may be 4 KiB, escaped up to 6 times that
	kind, data := "", ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && kind != "":
			switch kind {
			case "error":
				return fmt.Errorf("%w: the event stream of %s failed", leasegate.ErrUnavailable, stream)
			case "reconnect":
				return fmt.Errorf("%w: the event stream of %s ended: reconnect", leasegate.ErrShuttingDown, stream)
			}
			if err := fn(kind, data); err != nil {
				return err
			}
			kind, data = "", ""
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("leasegate: %s: %w", what, noAnswerError{err})
	}
	return fmt.Errorf("leasegate: %s: the gateway ended the stream", what)
}

// ObserveRetry is how long Observe waits before it reconnects a stream
// that dropped. A stream the gateway ended with a reconnect event (it is
// shutting down) is reconnected at once.
var ObserveRetry = 100 * time.Millisecond

// Observe sends the leadership of election name on the returned channel:
// the current one first, then every change (a new term, a new value);
// a Leader with Term 0 says there is no leader. A dropped stream is
// reconnected (after ObserveRetry), and the state it starts with is sent
// when it differs from the last one sent. The channel is closed when ctx
// ends, and only then; a refused stream (401, 403, 422) ends it too.
func (c *Client) Observe(ctx context.Context, name string) <-chan Leader {
	out := make(chan Leader)
	go func() {
		defer close(out)
		var last Leader
		sent := false
		send := func(ld Leader) error {
			if sent && ld == last {
				return nil
			}
			if err := sendOrDone(ctx, out, ld); err != nil {
				return err
			}
			last, sent = ld, true
			return nil
		}
		for ctx.Err() == nil {
			err := c.ObserveEvents(ctx, name, func(ev ElectionEvent) error {
				switch ev.Kind {
				case leasegate.ElectionState, leasegate.ElectionElected, leasegate.ElectionProclaimed:
					if ev.Leader != nil {
						return send(*ev.Leader)
					}
					return send(Leader{Name: name})
				case leasegate.ElectionResigned, leasegate.ElectionExpired:
					return send(Leader{Name: name})
				}
				return nil
			})
			var e *Error
			if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests {
				return
			}
			if errors.Is(err, leasegate.ErrShuttingDown) {
				continue
			}
			t := time.NewTimer(ObserveRetry)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// Elections is the gateway's election routes as a
// leasegate.ElectionService (the tenant rule of Locks applies; List needs
// an ops key).
func (c *Client) Elections() leasegate.ElectionService { return electionService{c} }

type electionService struct{ c *Client }

func (s electionService) Campaign(ctx context.Context, tenant string, req leasegate.CampaignRequest) (leasegate.CampaignResult, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.CampaignResult{}, err
	}
	ld, err := s.c.Campaign(ctx, req)
	var ne *NotElectedError
	if errors.As(err, &ne) {
		return leasegate.CampaignResult{Current: ne.Current, RetryAfter: ne.RetryAfter, Waited: req.Wait > 0}, nil
	}
	if err != nil {
		return leasegate.CampaignResult{}, domainErr(err)
	}
	// A new term starts at the campaign and ends TTL later; a renewal
	// keeps its earlier elected_at.
	renewed := ld.ExpiresAt.Sub(ld.ElectedAt) > req.TTL
	return leasegate.CampaignResult{Elected: true, Leadership: ld, Renewed: renewed}, nil
}

func (s electionService) Proclaim(ctx context.Context, tenant, name, candidate string, term int64, value string) (leasegate.Leader, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Leader{}, err
	}
	ld, err := s.c.Proclaim(ctx, Leader{Name: name, Candidate: candidate, Term: term}, value)
	return ld, domainErr(err, leasegate.ErrNotLeader)
}

func (s electionService) Resign(ctx context.Context, tenant, name, candidate string, term int64) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	return domainErr(s.c.Resign(ctx, Leader{Name: name, Candidate: candidate, Term: term}), leasegate.ErrNotLeader)
}

func (s electionService) Leader(ctx context.Context, tenant, name string) (leasegate.Leader, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.Leader{}, err
	}
	ld, err := s.c.Leader(ctx, name)
	return ld, domainErr(err, leasegate.ErrNoLeader)
}

func (s electionService) Observe(ctx context.Context, tenant, name string, events chan<- leasegate.ElectionEvent) error {
	if err := checkTenant(tenant); err != nil {
		return err
	}
	err := s.c.ObserveEvents(ctx, name, func(ev ElectionEvent) error { return sendOrDone(ctx, events, ev) })
	if ctx.Err() != nil {
		return nil
	}
	return domainErr(err)
}

func (s electionService) List(ctx context.Context, tenant, prefix, cursor string, limit int) (leasegate.ElectionPage, error) {
	if err := checkTenant(tenant); err != nil {
		return leasegate.ElectionPage{}, err
	}
	q := pageQuery(limit, cursor)
	q.Set("kind", "elections")
	if prefix != "" {
		q.Set("prefix", prefix)
	}
	type item struct {
		leaderJSON
		Waiters int `json:"waiters"`
	}
	items, next, err := getPage[item](ctx, s.c, "/locks", q)
	if err != nil {
		return leasegate.ElectionPage{}, domainErr(err)
	}
	out := leasegate.ElectionPage{Items: make([]leasegate.HeldElection, 0, len(items)), NextCursor: next}
	for _, it := range items {
		out.Items = append(out.Items, leasegate.HeldElection{Leader: it.leader(), Waiters: it.Waiters})
	}
	return out, nil
}
