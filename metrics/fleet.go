package metrics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/keyspace"
)

// The fleet's charts (docs/operations.md): every ActivityEvery each
// gateway samples its counters and writes its last hour, per minute, to
// Redis in one MULTI (keyspace.GatewayActivity, expiring after
// ActivityTTL, and its id in keyspace.ActivityGateways); the Locks view
// sums the live snapshots. Nothing on the lock path changes.
const (
	ActivityEvery = 10 * time.Second
	ActivityTTL   = 3 * ActivityEvery
)

// errBadSnapshot: a snapshot in Redis is not one this code writes.
var errBadSnapshot = errors.New("metrics: malformed activity snapshot")

type fleet struct {
	rdb   redis.UniversalClient
	space keyspace.Space
	id    string
}

// snapshot is what a gateway publishes: its non-zero minutes, each
// [unix minute, acquires, contended, flags, bans].
type snapshot struct {
	Minutes [][activitySeries + 1]float64 `json:"minutes"`
}

// Share publishes a's activity to rdb under space every ActivityEvery, at
// once first, until ctx ends; then it takes the snapshot out, so a
// stopped gateway is not counted. While it runs, Fleet reads the fleet's.
func (a *Activity) Share(ctx context.Context, rdb redis.UniversalClient, space keyspace.Space) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	f := &fleet{rdb: rdb, space: space, id: hex.EncodeToString(b[:])}
	a.mu.Lock()
	a.fleet = f
	a.mu.Unlock()
	t := time.NewTicker(ActivityEvery)
	defer t.Stop()
	for {
		_ = a.Publish(ctx, time.Now()) // a missed snapshot expires; the next one is in ActivityEvery
		select {
		case <-ctx.Done():
			a.mu.Lock()
			a.fleet = nil
			a.mu.Unlock()
			c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_, _ = rdb.TxPipelined(c, func(p redis.Pipeliner) error {
				p.Del(c, space.GatewayActivity(f.id))
				p.ZRem(c, space.ActivityGateways(), f.id)
				return nil
			})
			return
		case <-t.C:
		}
	}
}

// Publish samples a and, while Share runs, writes its snapshot: one round
// trip to Redis.
func (a *Activity) Publish(ctx context.Context, now time.Time) error {
	a.Sample(now)
	a.mu.Lock()
	f := a.fleet
	a.mu.Unlock()
	if f == nil {
		return nil
	}
	var s snapshot
	series := a.Series(now)
	cur := now.Unix() / 60
	for k := range ActivityMinutes {
		row := [activitySeries + 1]float64{float64(cur - int64(ActivityMinutes-1-k))}
		nonzero := false
		for i := range series {
			row[i+1] = series[i][k]
			nonzero = nonzero || row[i+1] != 0
		}
		if nonzero {
			s.Minutes = append(s.Minutes, row)
		}
	}
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	idx := f.space.ActivityGateways()
	expiry := now.Add(ActivityTTL).UnixMilli()
	_, err = f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, f.space.GatewayActivity(f.id), body, ActivityTTL)
		p.ZAdd(ctx, idx, redis.Z{Score: float64(expiry), Member: f.id})
		// Gateways gone for a while (their clocks may differ a little).
		p.ZRemRangeByScore(ctx, idx, "-inf", strconv.FormatInt(now.Add(-ActivityTTL).UnixMilli(), 10))
		p.PExpire(ctx, idx, 2*ActivityTTL)
		return nil
	})
	return err
}

// Fleet returns the series of Series summed over every gateway whose
// snapshot is live, and how many gateways that is (this one included).
// Without Share it is this gateway's alone (1). When Redis cannot be read
// it is this gateway's too, with the error.
func (a *Activity) Fleet(ctx context.Context, now time.Time) ([activitySeries][]float64, int, error) {
	a.Sample(now)
	out := a.Series(now)
	a.mu.Lock()
	f := a.fleet
	a.mu.Unlock()
	if f == nil {
		return out, 1, nil
	}
	ids, err := f.rdb.ZRange(ctx, f.space.ActivityGateways(), 0, -1).Result()
	if err != nil {
		return out, 1, err
	}
	keys := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != f.id {
			keys = append(keys, f.space.GatewayActivity(id))
		}
	}
	if len(keys) == 0 {
		return out, 1, nil
	}
	vals, err := f.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return out, 1, err
	}
	sum, gateways := out, 1
	for i := range sum {
		sum[i] = append([]float64(nil), out[i]...)
	}
	cur := now.Unix() / 60
	for _, v := range vals {
		body, ok := v.(string)
		if !ok {
			continue // expired since the ZRANGE
		}
		var s snapshot
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			return out, 1, fmt.Errorf("%w: %v", errBadSnapshot, err)
		}
		gateways++
		for _, row := range s.Minutes {
			k := int64(ActivityMinutes-1) - (cur - int64(row[0]))
			if k < 0 || k >= ActivityMinutes {
				continue
			}
			for i := range sum {
				sum[i][k] += row[i+1]
			}
		}
	}
	return sum, gateways, nil
}
