// Package metrics holds every Prometheus collector leasegate exports, in
// one place, so each outcome is counted once. Components take a *Metrics
// and may be given nil-safe defaults in tests via New(prometheus.NewRegistry()).
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const ns = "leasegate"

// Metrics are leasegate's collectors.
type Metrics struct {
	reg *prometheus.Registry

	// HTTP
	RequestDuration *prometheus.HistogramVec // route, method, status
	// Problems counts the problem answers (JSON, or the ops page's HTML),
	// by route template and problem type: the code's slug (ProblemAnswered).
	Problems *prometheus.CounterVec // route, type

	// Resource locks
	Acquires *prometheus.CounterVec // outcome: acquired, contended, waited, timed_out, abandoned
	Releases *prometheus.CounterVec // result: released, not_found, forbidden
	Renewals *prometheus.CounterVec // result: renewed, not_found, forbidden
	Waiters  prometheus.Gauge
	// MaxWaiters is the configured cap (--max-waiters) on the acquires
	// waiting at once on this gateway: locks, lock sets, semaphores and
	// election campaigns together; 0 is no cap.
	MaxWaiters prometheus.Gauge
	// LocksHeld is how many resource locks were held at the lock index's
	// last complete sweep, over every tenant (server/operator.go);
	// exported only once a sweep has succeeded, and not after a failed one.
	LocksHeld *KnownGauge
	// LockDelayRefusals counts acquires refused because the last lease
	// expired and is still in its lock delay (docs/fencing.md), by kind:
	// lock, lock_set, election.
	LockDelayRefusals *prometheus.CounterVec // kind
	// LockIndexFailures counts new grants the lock index missed: its
	// second step (Redis Cluster) failed, so the lease is granted but not
	// listed until its next grant (docs/operations.md).
	LockIndexFailures prometheus.Counter
	// ReleaseMessages counts the release wake-ups this gateway received,
	// by kind: classic (the fleet-wide channel) or sharded (a resource's
	// shard channel, Redis Cluster >= 7).
	ReleaseMessages *prometheus.CounterVec // kind
	releaseMsgs     [2]prometheus.Counter  // classic, sharded
	// ReleaseShardChannels is how many shard channels this gateway is
	// subscribed to (resources waited on or watched here, on Cluster).
	ReleaseShardChannels prometheus.Gauge

	// Redis
	RedisErrors  *prometheus.CounterVec   // op
	RedisLatency *prometheus.HistogramVec // op
	// RedisUp is 1 while a Redis node (by address; "master" under
	// Sentinel) is taken to be reachable, 0 while calls that need it are
	// answered 503 at once (internal/storehealth).
	RedisUp *prometheus.GaugeVec // node
	// RedisStateChanges counts a node's changes of state, to "down" or "up".
	RedisStateChanges *prometheus.CounterVec // node, to
	// RedisTopologyChanges and RedisReplicas follow a Redis Cluster's
	// slot map (cluster.go).
	RedisTopologyChanges prometheus.Counter
	RedisReplicas        *prometheus.GaugeVec // node

	// Abuse
	AbuseAttempts *prometheus.CounterVec // lock, result: acquired, repeated, banned
	AbuseFlags    *prometheus.CounterVec // lock
	AbuseBans     *prometheus.CounterVec // lock, source: policy, operator

	// Webhooks (package webhook)
	WebhookDeliveries *prometheus.CounterVec // result: delivered, failed, dead
	WebhookOutbox     prometheus.Gauge       // entries in the outbox stream
	WebhookPending    prometheus.Gauge       // events claimed, not yet delivered (all URLs)
	WebhookDead       prometheus.Gauge       // entries in the dead-letter stream

	// Authentication
	AuthRefusals *prometheus.CounterVec // via: bearer, login, session; reason

	BuildInfo *prometheus.GaugeVec // version, commit, goversion
	// Semaphores and claims (docs/metrics.md)
	SemAcquires *prometheus.CounterVec // outcome: acquired, contended, waited, timed_out, abandoned, limit_mismatch
	SemReleases *prometheus.CounterVec // result: released, not_found, forbidden
	SemHolders  prometheus.Histogram   // live holders after each acquire answer
	SemWaiters  prometheus.Gauge

	// Leader elections (docs/elections.md, docs/metrics.md)
	Elections       *prometheus.CounterVec // outcome: won, renewed, lost, abandoned
	Resignations    *prometheus.CounterVec // result: resigned, not_leader
	ElectionWaiters prometheus.Gauge
	Claims          *prometheus.CounterVec // event: started, expired, extended, in_progress, completed, replayed, abandoned, removed

	// Contention, by resource class (contention.go)
	LockWait          *prometheus.HistogramVec // class
	LockHold          *prometheus.HistogramVec // class
	LockContended     *prometheus.CounterVec   // class
	LockForceReleases *prometheus.CounterVec   // class
	LockExpiries      *prometheus.CounterVec   // class
	lockClasses       atomic.Pointer[classes]
	activityOnce      sync.Once
	activity          *Activity

	// observers caches RequestDuration's children by label values, so a
	// request does not pay WithLabelValues' label slice, status string and
	// hashing. The set is bounded: routes are templates and methods are
	// folded to the standard ones by the caller.
	observersMu sync.RWMutex
	observers   map[requestLabels]prometheus.Observer

	acquires, releases, renewals labelled
}

type requestLabels struct {
	route, method string
	status        int
}

// ObserveRequest records one HTTP request's latency under its route
// template, method label and status.
func (m *Metrics) ObserveRequest(route, method string, status int, d time.Duration) {
	k := requestLabels{route, method, status}
	m.observersMu.RLock()
	o, ok := m.observers[k]
	m.observersMu.RUnlock()
	if !ok {
		o = m.RequestDuration.WithLabelValues(route, method, strconv.Itoa(status))
		m.observersMu.Lock()
		if m.observers == nil {
			m.observers = make(map[requestLabels]prometheus.Observer)
		}
		m.observers[k] = o
		m.observersMu.Unlock()
	}
	o.Observe(d.Seconds())
}

// labelled is a one-label CounterVec with the children of its known
// values resolved once, so a hot path increments a counter without
// WithLabelValues (a label slice and a hash per call). Resolving them
// also exports each known value from the start, at 0.
type labelled struct {
	vec      *prometheus.CounterVec
	children map[string]prometheus.Counter
}

func newLabelled(vec *prometheus.CounterVec, values ...string) labelled {
	l := labelled{vec: vec, children: make(map[string]prometheus.Counter, len(values))}
	for _, v := range values {
		l.children[v] = vec.WithLabelValues(v)
	}
	return l
}

func (l labelled) with(v string) prometheus.Counter {
	if c, ok := l.children[v]; ok {
		return c
	}
	return l.vec.WithLabelValues(v)
}

// AcquireOutcome is lock_acquires_total{outcome}.
func (m *Metrics) AcquireOutcome(outcome string) prometheus.Counter {
	return m.acquires.with(outcome)
}

// ReleaseResult is lock_releases_total{result}.
func (m *Metrics) ReleaseResult(result string) prometheus.Counter {
	return m.releases.with(result)
}

// RenewResult is lock_renewals_total{result}.
func (m *Metrics) RenewResult(result string) prometheus.Counter {
	return m.renewals.with(result)
}

// ProblemAnswered counts one problem answer on route (its template, or
// "unmatched") of type typ (a code's slug). Not on the hot path of
// success answers, so no cached children: both label sets are bounded
// (routes are templates, types a fixed set), but their product is not
// worth exporting at 0 before anything failed.
func (m *Metrics) ProblemAnswered(route, typ string) {
	m.Problems.WithLabelValues(route, typ).Inc()
}

// RedisState records a Redis node's state: up when it is first seen
// (changed false), and each change of state after that (changed true).
func (m *Metrics) RedisState(node string, up, changed bool) {
	v, to := 0.0, "down"
	if up {
		v, to = 1, "up"
	}
	m.RedisUp.WithLabelValues(node).Set(v)
	c := m.RedisStateChanges.WithLabelValues(node, to)
	if changed {
		c.Inc()
	}
}

// WebhookOutboxFailed counts a webhook event that could not be written to
// the outbox in its second step (Redis Cluster, docs/abuse.md):
// redis_errors_total{op="webhook_outbox"}.
func (m *Metrics) WebhookOutboxFailed() {
	m.RedisErrors.WithLabelValues("webhook_outbox").Inc()
}

// New creates the collectors and registers them (and the Go and process
// collectors) on reg.
func New(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		RequestDuration: histogramVec("http_request_duration_seconds",
			"HTTP request latency by route template, method and status.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			"route", "method", "status"),
		Problems: counterVec("http_problems_total",
			"Problem answers (application/problem+json, or the ops page's HTML error page) by route template and problem type: the slug of the type URI, or unknown for a code outside the contract.",
			"route", "type"),
		Acquires: counterVec("lock_acquires_total",
			"Acquire outcomes: acquired, contended, waited (acquired after waiting), timed_out (waited, not acquired), abandoned (the client left while waiting).",
			"outcome"),
		Releases: counterVec("lock_releases_total", "Release results: released, not_found, forbidden.", "result"),
		Renewals: counterVec("lock_renewals_total", "Renew results: renewed, not_found, forbidden.", "result"),
		Waiters:  gauge("lock_waiters", "Acquires currently waiting (wait_ms) in this gateway."),
		MaxWaiters: gauge("max_waiters",
			"The configured --max-waiters: the most acquires (locks, lock sets, semaphores and election campaigns together) waiting at once on this gateway; 0 is no cap."),
		LocksHeld: NewKnownGauge(prometheus.BuildFQName(ns, "", "locks_held"),
			"Resource locks (lock-set members included) held at the lock index's last complete sweep, over every tenant of this gateway's keys; absent until a sweep succeeds and after a failed one."),
		LockDelayRefusals: counterVec("lock_delay_refusals_total",
			"Acquires refused because the last lease ended by expiry and is still in its lock delay, by kind: lock, lock_set, election.",
			"kind"),
		LockIndexFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "lock_index_failures_total",
			Help: "New grants the lock index missed because its second step failed (Redis Cluster): granted, but not listed until the next grant."}),
		ReleaseMessages: counterVec("release_messages_received_total",
			"Release wake-up messages received from Redis pub/sub by this gateway, by kind: classic (the one channel every gateway hears) or sharded (a shard channel of a resource waited on here; Redis Cluster >= 7).",
			"kind"),
		ReleaseShardChannels: gauge("release_shard_channels",
			"Shard channels this gateway is subscribed to (SSUBSCRIBE confirmed): one per resource or semaphore waited on or watched here, on Redis Cluster >= 7."),

		RedisErrors: counterVec("redis_errors_total", "Redis calls that failed, by operation.", "op"),
		RedisLatency: histogramVec("redis_duration_seconds",
			"Latency of Redis calls (one script each), by operation.",
			[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
			"op"),
		RedisUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "redis_up",
			Help: "1 while the Redis node is reachable, 0 while calls that need it are answered 503 at once without trying it, by node (address; \"master\" under Sentinel)."},
			[]string{"node"}),
		RedisStateChanges: counterVec("redis_state_changes_total",
			"Changes of a Redis node's state as the gateway sees it, by node and to (down, up).",
			"node", "to"),

		AbuseAttempts: counterVec("abuse_attempts_total",
			"User-lock attempts by lock name and result: acquired, repeated, banned.",
			"lock", "result"),
		AbuseFlags: counterVec("abuse_flags_total", "Users flagged (one per lock, user and window).", "lock"),
		AbuseBans: counterVec("abuse_bans_total",
			"Bans placed, by lock (\"\" for operator bans) and source: policy or operator.",
			"lock", "source"),

		WebhookDeliveries: counterVec("webhook_deliveries_total",
			"Webhook delivery attempts by result: delivered (2xx), failed (will be retried), dead (given up, dead-lettered).",
			"result"),
		WebhookOutbox: gauge("webhook_outbox_entries",
			"Entries in the webhook outbox stream (delivered or not; bounded by its MAXLEN)."),
		WebhookPending: gauge("webhook_pending",
			"Webhook events read but not yet delivered, over all URLs (the consumer groups' pending entries)."),
		WebhookDead: gauge("webhook_dead_letters",
			"Webhook events given up on after the last retry (the dead-letter stream's length)."),

		AuthRefusals: counterVec("auth_refusals_total",
			"Refused authentications by via (bearer, login, session) and reason (a fixed set per via, docs/metrics.md).",
			"via", "reason"),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: ns, Name: "build_info",
			Help: "Always 1; labels say which build is running.",
		}, []string{"version", "commit", "goversion"}),
	}
	m.acquires = newLabelled(m.Acquires, "acquired", "contended", "waited", "timed_out", "abandoned")
	m.releases = newLabelled(m.Releases, "released", "not_found", "forbidden")
	m.renewals = newLabelled(m.Renewals, "renewed", "not_found", "forbidden")
	for _, k := range []string{"lock", "lock_set", "election"} {
		m.LockDelayRefusals.WithLabelValues(k)
	}
	m.releaseMsgs = [2]prometheus.Counter{m.ReleaseMessages.WithLabelValues("classic"), m.ReleaseMessages.WithLabelValues("sharded")}
	m.newPrimitives()
	m.newContention()
	m.newCluster()
	reg.MustRegister(m.SemAcquires, m.SemReleases, m.SemHolders, m.SemWaiters, m.Claims)
	reg.MustRegister(m.Elections, m.Resignations, m.ElectionWaiters)
	reg.MustRegister(
		m.RequestDuration, m.Problems, m.Acquires, m.Releases, m.Renewals, m.Waiters, m.MaxWaiters, m.LocksHeld, m.LockDelayRefusals, m.LockIndexFailures, m.ReleaseMessages, m.ReleaseShardChannels,
		m.RedisErrors, m.RedisLatency, m.RedisUp, m.RedisStateChanges,
		m.AbuseAttempts, m.AbuseFlags, m.AbuseBans, m.AuthRefusals, m.BuildInfo,
		m.WebhookDeliveries, m.WebhookOutbox, m.WebhookPending, m.WebhookDead,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

func (m *Metrics) newPrimitives() {
	m.SemAcquires = counterVec("semaphore_acquires_total",
		"Semaphore acquire outcomes: acquired, contended (full), waited (acquired after waiting), timed_out (waited, not acquired), abandoned (the client left while waiting), limit_mismatch.",
		"outcome")
	m.SemReleases = counterVec("semaphore_releases_total",
		"Semaphore release results: released, not_found, forbidden.", "result")
	m.SemHolders = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: ns, Name: "semaphore_holders",
		Help:    "Live holders of the semaphore after each acquire answer.",
		Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 10000},
	})
	m.SemWaiters = gauge("semaphore_waiters",
		"Semaphore acquires currently waiting (wait_ms) in this gateway.")
	m.Elections = counterVec("elections_total",
		"Campaign outcomes: won (a new term), renewed (the sitting leader campaigned again), lost (someone else leads, or a lock delay runs; after waiting when wait_ms was given), abandoned (the client left while waiting).",
		"outcome")
	m.Resignations = counterVec("election_resignations_total",
		"Resignations: resigned, not_leader (the candidate did not lead with that term).", "result")
	m.ElectionWaiters = gauge("election_waiters",
		"Campaigns currently waiting (wait_ms) in this gateway.")
	m.Claims = counterVec("claims_total",
		"Claim events: started (the caller does the work), expired (started over a pending claim whose lease had expired), extended (same owner again), in_progress (409), completed, replayed (a done claim answered instead of running the work again, or a repeated complete), abandoned, removed (forced by an operator).",
		"event")
}

// counterVec, gauge and histogramVec declare a collector in the
// leasegate namespace; New registers them.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
}

func gauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help})
}

func histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets}, labels)
}

// ReleaseMessage counts one release wake-up received (redislock's
// WaiterOptions.OnMessage).
func (m *Metrics) ReleaseMessage(sharded bool) {
	i := 0
	if sharded {
		i = 1
	}
	m.releaseMsgs[i].Inc()
}

// NewStandalone returns Metrics on a registry of their own: the default
// of a package given no Metrics (abuse, webhook, handlers, opsui), and a
// test's. Its /metrics shows only what was counted on it.
func NewStandalone() *Metrics { return New(prometheus.NewRegistry()) }

// Registry is where the collectors live.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
