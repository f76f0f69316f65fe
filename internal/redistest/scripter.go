package redistest

import (
	"context"

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
