package metrics

import (
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Contention metrics (docs/metrics.md): wait and hold times, contended
// acquires, forced releases and expiries, labelled by a bounded class of
// the resource, never by the resource itself: the longest configured
// prefix it starts with (SetLockClasses), or OtherClass.

// OtherClass is the class of a resource that starts with no configured
// prefix.
const OtherClass = "_other"

// classes is the configured prefixes (longest first) with their children.
type classes struct {
	prefixes []string
	by       map[string]*classChildren
}

type classChildren struct {
	wait, hold                  prometheus.Observer
	contended, forced, expiries prometheus.Counter
}

func (m *Metrics) newContention() {
	m.LockWait = histogramVec("lock_wait_seconds",
		"From the acquire request to the grant, for granted acquires, by resource class.",
		[]float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		"class")
	m.LockHold = histogramVec("lock_hold_seconds",
		"From the grant to the release or forced release (by the Redis clock), by resource class.",
		[]float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900, 3600, 86400},
		"class")
	m.LockContended = counterVec("lock_contended_acquires_total",
		"Acquires that found the lease held by another owner (answered contended, or made to wait), by resource class.",
		"class")
	m.LockForceReleases = counterVec("lock_force_releases_total",
		"Leases ended by an operator (DELETE /locks/{resource}?force=true), by resource class.",
		"class")
	m.LockExpiries = counterVec("lock_expiries_total",
		"Leases that ended by expiry, not by a release, as the lock index's sweep finds them, by resource class.",
		"class")
	m.reg.MustRegister(m.LockWait, m.LockHold, m.LockContended, m.LockForceReleases, m.LockExpiries)
	m.SetLockClasses(nil)
}

// SetLockClasses sets the resource prefixes that are classes of their own
// (every other resource is OtherClass). Call it before serving.
func (m *Metrics) SetLockClasses(prefixes []string) {
	c := &classes{by: map[string]*classChildren{}}
	for _, p := range append([]string{OtherClass}, prefixes...) {
		if _, dup := c.by[p]; dup || p == "" {
			continue
		}
		if p != OtherClass {
			c.prefixes = append(c.prefixes, p)
		}
		c.by[p] = &classChildren{
			wait: m.LockWait.WithLabelValues(p), hold: m.LockHold.WithLabelValues(p),
			contended: m.LockContended.WithLabelValues(p), forced: m.LockForceReleases.WithLabelValues(p),
			expiries: m.LockExpiries.WithLabelValues(p),
		}
	}
	sort.Slice(c.prefixes, func(i, j int) bool { return len(c.prefixes[i]) > len(c.prefixes[j]) })
	m.lockClasses.Store(c)
}

// LockClass is the class of resource: the longest configured prefix it
// starts with, or OtherClass (the request spans' lock class).
func (m *Metrics) LockClass(resource string) string {
	return m.lockClasses.Load().of(resource)
}

// of is the class of resource: the longest configured prefix it starts
// with, or OtherClass.
func (c *classes) of(resource string) string {
	for _, p := range c.prefixes {
		if strings.HasPrefix(resource, p) {
			return p
		}
	}
	return OtherClass
}

// class is the children of resource's class, from one load of the
// classes (the prefix and its children come from the same set).
func (m *Metrics) class(resource string) *classChildren {
	c := m.lockClasses.Load()
	return c.by[c.of(resource)]
}

// ObserveAcquire records an acquire's contention: its wait when granted
// (outcome acquired or waited), and whether it found the lease held
// (contended, waited, timed_out).
func (m *Metrics) ObserveAcquire(resource, outcome string, took time.Duration) {
	c := m.class(resource)
	switch outcome {
	case "acquired":
		c.wait.Observe(took.Seconds())
	case "waited":
		c.wait.Observe(took.Seconds())
		c.contended.Inc()
	case "contended", "timed_out":
		c.contended.Inc()
	}
}

// ObserveRelease records how long a released lease was held.
func (m *Metrics) ObserveRelease(resource string, held time.Duration) {
	m.class(resource).hold.Observe(held.Seconds())
}

// ObserveForceRelease records a forced release and how long the lease
// had been held.
func (m *Metrics) ObserveForceRelease(resource string, held time.Duration) {
	c := m.class(resource)
	c.forced.Inc()
	c.hold.Observe(held.Seconds())
}

// ObserveExpiry records a lease that ended by expiry.
func (m *Metrics) ObserveExpiry(resource string) {
	m.class(resource).expiries.Inc()
}
