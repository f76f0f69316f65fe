package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

// BenchmarkAttemptLogCost is the attempt script's Redis CPU with the
// attempt log off and on, side by side on one redis-server: rounds of
// 2,000 attempts by 10,000 users on one lock at random (most attempts
// repeat a running window, a few flag), a round off then a round on,
// each measured from freshly reset INFO commandstats (evalsha usec: the
// commands the script runs included). It reports the medians per
// attempt, the median of the rounds' on/off ratios, and the memory of
// the stream per recorded attempt (MEMORY USAGE / XLEN). docs/abuse.md
// has the figures:
//
//	go test -run '^$' -bench AttemptLogCost -benchtime 20x ./abuse/
func BenchmarkAttemptLogCost(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	on := policies(5)
	off := on
	off.AttemptLogMaxEntries = 0
	svcs := []*Service{New(rdb, Options{Prefix: "off:", Policies: off, Log: zap.NewNop()}),
		New(rdb, Options{Prefix: "on:", Policies: on, Log: zap.NewNop()})}
	sideBySide(b, rdb, svcs, "off", "on")
	key := svcs[1].keys.AttemptLog("acme", "login")
	mem, err1 := rdb.MemoryUsage(ctx, key, 0).Result()
	n, err2 := rdb.XLen(ctx, key).Result()
	if err1 != nil || err2 != nil || n == 0 {
		b.Fatalf("MEMORY USAGE %d %v, XLEN %d %v", mem, err1, n, err2)
	}
	b.ReportMetric(float64(mem)/float64(n), "bytes/entry")
}

// sideBySide runs rounds of 2,000 attempts by 10,000 users on one lock
// at random through svcs[0] then svcs[1], each from freshly reset INFO
// commandstats, and reports the medians per attempt and of the ratios.
func sideBySide(b *testing.B, rdb *redis.Client, svcs []*Service, a, c string) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const batch = 2000
	var per [2][]float64
	var ratios []float64
	for b.Loop() {
		var usec [2]float64
		for i, svc := range svcs {
			if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			for range batch {
				user := "user-" + strconv.Itoa(rng.IntN(10000))
				if _, err := svc.Attempt(ctx, "acme", "login", user, time.Minute, leasegate.RequestMeta{}); err != nil {
					b.Fatal(err)
				}
			}
			usec[i] = scriptUsec(b, rdb) / batch
			per[i] = append(per[i], usec[i])
		}
		ratios = append(ratios, usec[1]/usec[0])
	}
	b.ReportMetric(median(per[0]), a+"-redis-µs/attempt")
	b.ReportMetric(median(per[1]), c+"-redis-µs/attempt")
	b.ReportMetric(median(ratios), c+"/"+a)
}

// BenchmarkRollingWindowCost is the attempt script's Redis CPU with fixed
// windows and with a rolling span of 60 s (max_attempts 5, attempt log
// off), side by side as BenchmarkAttemptLogCost, and the memory of one
// user who made max_attempts attempts (the counter, which holds the span).
//
//	go test -run '^$' -bench RollingWindowCost -benchtime 20x ./abuse/
func BenchmarkRollingWindowCost(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	fixed := policies(5)
	fixed.AttemptLogMaxEntries = 0
	rolling := fixed
	rolling.Default.Rolling = time.Minute
	svcs := []*Service{New(rdb, Options{Prefix: "fixed:", Policies: fixed, Log: zap.NewNop()}),
		New(rdb, Options{Prefix: "rolling:", Policies: rolling, Log: zap.NewNop()})}
	sideBySide(b, rdb, svcs, "fixed", "rolling")
	var mem [2]int64
	for i, svc := range svcs {
		for range 5 {
			if _, err := svc.Attempt(ctx, "acme", "mem", "someone", time.Minute, leasegate.RequestMeta{}); err != nil {
				b.Fatal(err)
			}
		}
		mem[i] = rdb.MemoryUsage(ctx, svc.keys.User("acme", "someone").Counter("mem"), 0).Val()
	}
	b.ReportMetric(float64(mem[0]), "fixed-bytes/user")
	b.ReportMetric(float64(mem[1]), "rolling-bytes/user")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// scriptUsec is Redis's time in EVALSHA and EVAL since the last reset.
func scriptUsec(b *testing.B, rdb *redis.Client) float64 {
	return cmdUsec(b, rdb, "cmdstat_evalsha", "cmdstat_eval")
}

// cmdUsec is Redis's time in the commands named (INFO commandstats).
func cmdUsec(b *testing.B, rdb *redis.Client, names ...string) float64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var usec float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		if !slices.Contains(names, name) {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "usec" {
				f, _ := strconv.ParseFloat(v, 64)
				usec += f
			}
		}
	}
	return usec
}

// BenchmarkBacktestAMillionAttempts backtests a candidate over an attempt
// log of 1,000,000 entries (50,000 users, a day) on a redis-server, and
// reports the longest single XRANGE Redis ran for it (SLOWLOG). It fills
// the log first (a few seconds), so it runs only with LEASEGATE_BENCH_1M=1:
//
//	LEASEGATE_BENCH_1M=1 go test -run '^$' -bench BacktestAMillion -benchtime 5x ./abuse/
func BenchmarkBacktestAMillionAttempts(b *testing.B) {
	if os.Getenv("LEASEGATE_BENCH_1M") == "" {
		b.Skip("set LEASEGATE_BENCH_1M=1 to fill an attempt log with 1,000,000 attempts")
	}
	const n, users = 1_000_000, 50_000
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	pol := policies(5)
	pol.AttemptLogMaxEntries = 2 * n
	svc := New(rdb, Options{Prefix: "m:", Policies: pol, Log: zap.NewNop()})
	key := svc.keys.AttemptLog("acme", "login")
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	start := now.Add(-23 * time.Hour).UnixMilli()
	step := (now.UnixMilli() - start) / n
	rng := rand.New(rand.NewPCG(3, 4))
	type win struct{ n, start int64 }
	wins := map[int]*win{}
	for i := 0; i < n; i += 10000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j := i; j < i+10000; j++ {
				at := start + int64(j)*step
				u := rng.IntN(users)
				w := wins[u]
				if w == nil || at-w.start >= 60000 {
					w = &win{start: at}
					wins[u] = w
				}
				w.n++
				o := outcomeRepeated
				switch {
				case w.n == 1:
					o = outcomeHeld
				case w.n == 5:
					o = outcomeFlagged
				}
				p.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: strconv.FormatInt(at, 10) + "-*",
					Values: []any{"d", fmt.Sprintf("%d %d 60000 %s 0 user-%d", w.n, at-w.start, o, u)}})
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if mem, err := rdb.MemoryUsage(ctx, key, 0).Result(); err == nil {
		b.Logf("the log of %d attempts takes %d bytes (%.1f an attempt)", n, mem, float64(mem)/n)
	}
	if err := rdb.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err(); err != nil {
		b.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "slowlog-max-len", "4096").Err(); err != nil {
		b.Fatal(err)
	}
	q := leasegate.BacktestQuery{Lock: "login", Policy: json.RawMessage(`{"max_attempts": 3, "ban_after_flags": 2, "ban_seconds": 600, "factor": 2}`)}
	var longest time.Duration
	var xrange []float64
	var cpu time.Duration
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := rdb.SlowLogReset(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		before := processCPU()
		bt, err := svc.Backtest(ctx, "acme", q)
		cpu += processCPU() - before
		if err != nil || bt.Recorded.Attempts != n {
			b.Fatalf("Backtest: %d attempts, %v", bt.Recorded.Attempts, err)
		}
		logs, err := rdb.SlowLogGet(ctx, 4096).Result()
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range logs {
			if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "xrange") {
				longest = max(longest, l.Duration)
				xrange = append(xrange, float64(l.Duration.Microseconds()))
			}
		}
	}
	b.ReportMetric(float64(longest.Microseconds()), "longest-xrange-µs")
	b.ReportMetric(median(xrange), "median-xrange-µs")
	b.ReportMetric(float64(len(xrange))/float64(b.N), "xranges/backtest")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "gateway-cpu-ms/backtest")
	b.ReportMetric(cmdUsec(b, rdb, "cmdstat_xrange")/1000/float64(b.N), "redis-ms/backtest")
}

// processCPU is the user and system time of this process.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
