package metrics

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that records every call's latency in
// RedisLatency and every failure in RedisErrors, labelled by operation:
//
//   - a script run (EVALSHA/EVAL) is labelled with its name in scripts
//     (e.g. "acquire"), or "script" when it is not in scripts;
//   - any other command with its lower-case name ("ping", "publish");
//   - a pipeline or transaction as "pipeline:" and the label of its first
//     command: go-redis itself pipelines "client setinfo" when it opens a
//     connection, which shows as "pipeline:client" (and "hello" before it).
//
// redis.Nil (a missing key) is an answer, not a failure. A NOSCRIPT reply
// to EVALSHA is not recorded at all: go-redis retries at once with EVAL,
// and that retry is the one call counted for the script run.
//
// Add it with client.AddHook(m.RedisHook(scripts.ByName())).
func (m *Metrics) RedisHook(scripts map[string]*redis.Script) redis.Hook {
	h := redisHook{m: m, bySHA: make(map[string]string, len(scripts))}
	for name, s := range scripts {
		h.bySHA[s.Hash()] = name
	}
	return h
}

type redisHook struct {
	m     *Metrics
	bySHA map[string]string // read-only after RedisHook
}

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err
		}
		h.record(h.op(cmd), time.Since(start), failed(err))
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 {
			return next(ctx, cmds)
		}
		start := time.Now()
		err := next(ctx, cmds)
		if allScripts(cmds) {
			// Script calls of concurrent requests sent together
			// (redislock.Batcher): each is one call of its op, and took as
			// long as the pipeline. NOSCRIPT is not a failure: the call is
			// sent again as EVAL.
			d := time.Since(start)
			for _, c := range cmds {
				if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
					continue
				}
				h.record(h.op(c), d, failed(c.Err()))
			}
			return err
		}
		bad := failed(err)
		for _, c := range cmds {
			bad = bad || failed(c.Err())
		}
		h.record("pipeline:"+h.op(cmds[0]), time.Since(start), bad)
		return err
	}
}

func (h redisHook) record(op string, d time.Duration, bad bool) {
	h.m.RedisLatency.WithLabelValues(op).Observe(d.Seconds())
	if bad {
		h.m.RedisErrors.WithLabelValues(op).Inc()
	}
}

// allScripts says whether every command of a pipeline is a script call.
func allScripts(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		switch c.Name() {
		case "evalsha", "eval", "evalsha_ro", "eval_ro":
		default:
			return false
		}
	}
	return true
}

func failed(err error) bool {
	return err != nil && !errors.Is(err, redis.Nil)
}

// op names a command for the metrics' "op" label.
func (h redisHook) op(cmd redis.Cmder) string {
	name := strings.ToLower(cmd.Name())
	args := cmd.Args()
	switch name {
	case "evalsha", "evalsha_ro":
		if len(args) > 1 {
			if sha, ok := args[1].(string); ok {
				if n, ok := h.bySHA[strings.ToLower(sha)]; ok {
					return n
				}
			}
		}
		return "script"
	case "eval", "eval_ro":
		if len(args) > 1 {
			if src, ok := args[1].(string); ok {
				sum := sha1.Sum([]byte(src))
				if n, ok := h.bySHA[hex.EncodeToString(sum[:])]; ok {
					return n
				}
			}
		}
		return "script"
	}
	return name
}
