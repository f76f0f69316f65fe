package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// KnownGauge is a gauge exported only while its value is known: a
// figure the gateway sometimes cannot tell (the held locks, after a
// failed sweep) is left out of the scrape, so a dashboard shows a gap
// rather than a stale or made-up number.
type KnownGauge struct {
	desc  *prometheus.Desc
	mu    sync.Mutex
	v     float64
	known bool
}

// NewKnownGauge returns a KnownGauge of fully qualified name, unknown
// until its first Set.
func NewKnownGauge(name, help string) *KnownGauge {
	return &KnownGauge{desc: prometheus.NewDesc(name, help, nil, nil)}
}

// Set makes the value known: v.
func (g *KnownGauge) Set(v float64) {
	g.mu.Lock()
	g.v, g.known = v, true
	g.mu.Unlock()
}

// Forget makes the value unknown: the next scrapes leave it out.
func (g *KnownGauge) Forget() {
	g.mu.Lock()
	g.known = false
	g.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (g *KnownGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect implements prometheus.Collector: one sample while the value is
// known, none otherwise.
func (g *KnownGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	v, known := g.v, g.known
	g.mu.Unlock()
	if known {
		ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, v)
	}
}
