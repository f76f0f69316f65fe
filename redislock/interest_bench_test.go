package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkContendedHandoff: 64 goroutines take turns on one resource
// through Service with wait_ms (acquire, release, again); one op is one
// hand-off. "registered" is the gateway's setting (PublishOnlyToWaiters:
// each waiting acquire registers its interest, two more script calls);
// "always-publish" is the setting before it.
func BenchmarkContendedHandoff(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	for _, tc := range []struct {
		name       string
		registered bool
	}{{"registered", true}, {"always-publish", false}} {
		b.Run(tc.name, func(b *testing.B) {
			prefix := "hb:" + tc.name + ":"
			ch := prefix + "released"
			l := redislock.New(rdb, redislock.Options{Prefix: prefix, ReleaseChannel: ch, PublishOnlyToWaiters: tc.registered})
			w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: ch})
			b.Cleanup(w.Close)
			svc := redislock.NewService(l, w, time.Second)
			ctx := context.Background()
			b.SetParallelism(32)
			b.ResetTimer()
			var seq atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				owner := "o" + strconv.FormatInt(seq.Add(1), 10)
				for pb.Next() {
					res, err := svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "one", Owner: owner, TTL: time.Minute, Wait: 10 * time.Second})
					if err != nil || !res.Acquired {
						b.Errorf("acquire: %+v, %v", res, err)
						return
					}
					if _, err := svc.Release(ctx, "", "one", owner, res.Lock.Token); err != nil {
						b.Errorf("release: %v", err)
						return
					}
				}
			})
		})
	}
}
