package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Activity keeps the last hour of a few counters per minute, in process,
// for the charts of the /ops/ Locks view: acquires, contended acquires,
// flags and bans. It samples the Prometheus counters (Sample, every few
// seconds and on every page view), so nothing on the hot path changes;
// Share publishes it to Redis and Fleet sums the fleet's (fleet.go).
type Activity struct {
	m  *Metrics
	mu sync.Mutex
	// ring[i] is minute (base+i) mod len; minutes holds which minute each
	// slot has.
	ring    [ActivityMinutes]activityMinute
	last    [activitySeries]float64
	sampled bool
	fleet   *fleet // while Share runs
}

// ActivityMinutes is how many minutes the charts show.
const ActivityMinutes = 60

const activitySeries = 4

// The series of Activity, in chart order.
var ActivityNames = [activitySeries]string{"acquires", "contended acquires", "flags", "bans"}

type activityMinute struct {
	minute int64
	n      [activitySeries]float64
}

// Activity is m's per-minute activity.
func (m *Metrics) Activity() *Activity {
	m.activityOnce.Do(func() { m.activity = &Activity{m: m} })
	return m.activity
}

func sum(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 16)
	go func() { c.Collect(ch); close(ch) }()
	total := 0.0
	for mt := range ch {
		var d dto.Metric
		if mt.Write(&d) == nil && d.Counter != nil {
			total += d.Counter.GetValue()
		}
	}
	return total
}

func (a *Activity) totals() [activitySeries]float64 {
	return [activitySeries]float64{sum(a.m.Acquires), sum(a.m.LockContended), sum(a.m.AbuseFlags), sum(a.m.AbuseBans)}
}

// Sample adds what the counters gained since the last sample to now's
// minute. The first sample only sets the baseline.
func (a *Activity) Sample(now time.Time) {
	t := a.totals()
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sampled {
		a.last, a.sampled = t, true
		return
	}
	min := now.Unix() / 60
	slot := &a.ring[min%ActivityMinutes]
	if slot.minute != min {
		*slot = activityMinute{minute: min}
	}
	for i := range t {
		slot.n[i] += max(t[i]-a.last[i], 0)
	}
	a.last = t
}

// Series returns each series' counts for the ActivityMinutes minutes up
// to now's, oldest first (0 where nothing was sampled).
func (a *Activity) Series(now time.Time) [activitySeries][]float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out [activitySeries][]float64
	cur := now.Unix() / 60
	for i := range out {
		out[i] = make([]float64, ActivityMinutes)
	}
	for k := 0; k < ActivityMinutes; k++ {
		min := cur - int64(ActivityMinutes-1-k)
		slot := a.ring[((min%ActivityMinutes)+ActivityMinutes)%ActivityMinutes]
		if slot.minute != min {
			continue
		}
		for i := range out {
			out[i][k] = slot.n[i]
		}
	}
	return out
}
