package redistest

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ReplyScripter is a redis.Scripter that runs nothing and answers every
// script with Reply, as a broken or hostile server (or a script edited
// without its decoder) might: for tests of how a reply is decoded.
type ReplyScripter struct {
	Reply any
}

var _ redis.Scripter = ReplyScripter{}

func (f ReplyScripter) cmd(ctx context.Context) *redis.Cmd {
	c := redis.NewCmd(ctx)
	c.SetVal(f.Reply)
	return c
}

// Eval answers Reply.
func (f ReplyScripter) Eval(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return f.cmd(ctx)
}

// EvalSha answers Reply.
func (f ReplyScripter) EvalSha(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return f.cmd(ctx)
}

// EvalRO answers Reply.
func (f ReplyScripter) EvalRO(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return f.cmd(ctx)
}

// EvalShaRO answers Reply.
func (f ReplyScripter) EvalShaRO(ctx context.Context, _ string, _ []string, _ ...any) *redis.Cmd {
	return f.cmd(ctx)
}

// ScriptExists answers an empty list.
func (ReplyScripter) ScriptExists(ctx context.Context, _ ...string) *redis.BoolSliceCmd {
	return redis.NewBoolSliceCmd(ctx)
}

// ScriptLoad answers an empty SHA.
func (ReplyScripter) ScriptLoad(ctx context.Context, _ string) *redis.StringCmd {
	return redis.NewStringCmd(ctx)
}

// ScriptsBy counts, from now on, the scripts rdb runs with owner among
// their arguments and that have answered: the tries of that owner's
// waiting acquire. A test that must know a waiter's re-check is over
// before it releases (the confirmation of a subscription wakes the
// waiter for one) waits for the count.
func ScriptsBy(rdb redis.UniversalClient, owner string) func() int64 {
	h := &scriptsBy{owner: owner}
	rdb.AddHook(h)
	return h.n.Load
}

type scriptsBy struct {
	owner string
	n     atomic.Int64
}

func (h *scriptsBy) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptsBy) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd)
		return err
	}
}

func (h *scriptsBy) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return err
	}
}

func (h *scriptsBy) count(cmd redis.Cmder) {
	if name := cmd.Name(); name != "evalsha" && name != "eval" {
		return
	}
	for _, a := range cmd.Args() {
		if a == h.owner {
			h.n.Add(1)
			return
		}
	}
}
