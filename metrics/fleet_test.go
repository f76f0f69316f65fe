package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/metrics"
)

// shared starts Share for a fresh Metrics on mr and returns its Activity,
// once its first snapshot is in Redis, and the function that stops it.
func shared(t *testing.T, mr *miniredis.Miniredis, space keyspace.Space) (*metrics.Metrics, func()) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	m := metrics.NewStandalone()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	before := len(mr.Keys())
	go func() { m.Activity().Share(ctx, rdb, space); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	for deadline := time.Now().Add(10 * time.Second); len(mr.Keys()) == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Share wrote no snapshot in 10 s")
		}
	}
	return m, stop
}

func acquires(t *testing.T, m *metrics.Metrics, now time.Time) (total float64, gateways int) {
	t.Helper()
	series, gateways, err := m.Activity().Fleet(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range series[0] {
		total += n
	}
	return total, gateways
}

// TestTheChartsSumEveryLiveGateway: what one gateway counted shows on
// another's charts once published, with the number of gateways; a
// snapshot that expired or a gateway that stopped is not counted.
func TestTheChartsSumEveryLiveGateway(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	space := keyspace.Space{Prefix: "fleet-test:"}
	a, stopA := shared(t, mr, space)
	b, _ := shared(t, mr, space)
	c, _ := shared(t, mr, keyspace.Space{Prefix: "another-fleet:"})

	now := time.Now()
	a.Acquires.WithLabelValues("acquired").Add(7)
	b.Acquires.WithLabelValues("acquired").Add(2)
	if err := a.Activity().Publish(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if got, gw := acquires(t, b, now); got != 9 || gw != 2 {
		t.Errorf("b's charts: got %v acquires from %d gateways, want 9 from 2", got, gw)
	}
	if got, gw := acquires(t, c, now); got != 0 || gw != 1 {
		t.Errorf("another prefix's charts: got %v acquires from %d gateways, want 0 from 1", got, gw)
	}

	mr.FastForward(metrics.ActivityTTL + time.Second) // a stops publishing, as if it died
	if got, gw := acquires(t, b, now); got != 2 || gw != 1 {
		t.Errorf("after a's snapshot expired: got %v acquires from %d gateways, want 2 from 1", got, gw)
	}
	if err := a.Activity().Publish(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	stopA()
	if got, gw := acquires(t, b, now); got != 2 || gw != 1 {
		t.Errorf("after a stopped: got %v acquires from %d gateways, want 2 from 1", got, gw)
	}
}

// TestTheChartsAreThisGatewaysWhenRedisFails: the page still draws this
// gateway's charts, and says why they are not the fleet's.
func TestTheChartsAreThisGatewaysWhenRedisFails(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	m, _ := shared(t, mr, keyspace.Space{})
	m.Acquires.WithLabelValues("acquired").Add(3)
	mr.SetError("LOADING")
	series, gateways, err := m.Activity().Fleet(context.Background(), time.Now())
	if err == nil || gateways != 1 {
		t.Fatalf("got %d gateways, err %v; want 1 and the error", gateways, err)
	}
	total := 0.0
	for _, n := range series[0] {
		total += n
	}
	if total != 3 {
		t.Errorf("got %v acquires, want this gateway's 3", total)
	}
}
