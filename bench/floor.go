package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// floor does the two steps of a lock cycle directly with go-redis: SET key
// owner NX PX ttl, then EVALSHA unlock.lua (compare-and-delete). Its pool
// has one connection per worker, so no worker waits for a connection.
type floor struct {
	rdb    *redis.Client
	keys   []string
	owners []string
	ttl    int64 // ms
}

func newFloor(opt *redis.Options, cfg Config, runID string) *floor {
	o := *opt
	o.PoolSize = cfg.Concurrency
	f := &floor{rdb: redis.NewClient(&o), ttl: cfg.TTL.Milliseconds()}
	// Workers 0..C-1, plus worker 0 again for the per-script counts.
	for i := range cfg.Concurrency {
		f.keys = append(f.keys, "bench:{"+runID+"-"+strconv.Itoa(i)+"}:floor")
		f.owners = append(f.owners, Owner(i))
	}
	return f
}

func (f *floor) Name() string { return "floor" }
func (f *floor) close()       { _ = f.rdb.Close() }
func (f *floor) Sends() []string {
	return []string{"set", "evalsha", "eval"}
}

func (f *floor) Acquire(ctx context.Context, i int) error {
	ok, err := f.rdb.SetNX(ctx, f.keys[i], f.owners[i], time.Duration(f.ttl)*time.Millisecond).Result()
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("SET NX %s: not granted", f.keys[i])
	}
	return nil
}

func (f *floor) Release(ctx context.Context, i int) error {
	n, err := unlock.Run(ctx, f.rdb, []string{f.keys[i]}, f.owners[i]).Int64()
	if err != nil {
		return err
	}
	if n != 1 {
		return errors.New("unlock: not held")
	}
	return nil
}
