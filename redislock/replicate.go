package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/scriptreply"
)

// Replication check (Config.MinReplicas).
//
// Redis replicates asynchronously: a master can answer a script, then die
// before any replica has the write, and the replica promoted by Sentinel or
// Cluster no longer knows the lease; it would hand the lock to the next
// caller while the first still believes it holds it. WAIT numreplicas
// timeout blocks until that many replicas have acknowledged every write
// made so far ON THE SAME CONNECTION, so the script and its WAIT must share
// one connection:
//
//   - *redis.Client (single node, or Sentinel's failover client): one
//     Pipeline is written and read on one pooled connection.
//   - *redis.ClusterClient: its pipelines route each command by its key,
//     and WAIT has none: go-redis refuses to pipeline it (command policy
//     "all shards") or sends it to an arbitrary master, never to "the node
//     that ran the script". So the pipeline is built on the client of the
//     master that owns the key's slot (MasterForKey).
//
// When fewer replicas acknowledge in time:
//   - Acquire undoes its grant by releasing with the new token (a same-owner
//     re-acquire too), and returns ErrNotReplicated: a 503 from acquire
//     always means "you do not hold this lock". If the undo itself fails the
//     lease stays until its TTL, held by an owner who was told no: the lock
//     is unavailable for a while, never held twice.
//   - Renew returns ErrNotReplicated and leaves the lease in place (same
//     owner, same token): the extension may or may not survive a failover,
//     so the holder must count only on the expiry it had before the renew,
//     and renew again.
//
// WAIT cannot make a lost write impossible (a replica that acknowledged can
// still lag behind another one that gets promoted), but with MinReplicas
// equal to the number of replicas, a promoted replica has every grant the
// gateway answered 200 for.

// Replication runs a grant's script and, with MinReplicas above 0, a
// WAIT on the connection that ran it (above). The lock engine and the
// semaphores use it; RDB must then be a *redis.Client or a
// *redis.ClusterClient.
type Replication struct {
	RDB         redis.Scripter
	MinReplicas int
	// Timeout bounds the WAIT (at least 1 ms).
	Timeout time.Duration
}

// Run runs script with keys and args. Without MinReplicas it is plain
// Script.Run. With it, the script and a WAIT go in one pipeline on one
// connection; acked is nil when enough replicas acknowledged, else the
// ErrNotReplicated to return (err is only the script's own failure).
func (r Replication) Run(ctx context.Context, script *redis.Script, keys []string, args ...interface{}) (v interface{}, acked error, err error) {
	if r.MinReplicas <= 0 {
		v, err := script.Run(ctx, r.RDB, keys, args...).Result()
		return v, nil, err
	}
	pipe, err := r.pipelineFor(ctx, keys[0])
	if err != nil {
		return nil, nil, err
	}
	cmd, wait := r.evalAndWait(ctx, pipe, script, false, keys, args)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd, wait = r.evalAndWait(ctx, pipe, script, true, keys, args)
	}
	v, err = cmd.Result()
	if err != nil {
		if c, ok := r.RDB.(*redis.ClusterClient); ok && isRedirect(err) {
			// The slot moved since the client last looked: refresh so the
			// next call goes to the new owner.
			c.ReloadState(ctx)
		}
		return nil, nil, err
	}
	n, werr := wait.Int64()
	if werr != nil {
		return v, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, werr), nil
	}
	if n < int64(r.MinReplicas) {
		return v, fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, n, r.MinReplicas, r.Timeout), nil
	}
	return v, nil, nil
}

// RunFlagged is Run with the reply read as {flag, ...} by d
// (scriptreply.Decoder.Flagged); a Redis failure is
// scriptreply.Unavailable.
func (r Replication) RunFlagged(ctx context.Context, d scriptreply.Decoder, script *redis.Script, op string, keys []string, args ...any) (v any, arr []any, flag int64, acked, err error) {
	v, acked, err = r.Run(ctx, script, keys, args...)
	if err != nil {
		return nil, nil, 0, nil, scriptreply.Unavailable(err)
	}
	arr, flag, err = d.Flagged(op, v)
	return v, arr, flag, acked, err
}

func (r Replication) evalAndWait(ctx context.Context, pipe redis.Pipeliner, script *redis.Script, eval bool, keys []string, args []interface{}) (*redis.Cmd, *redis.Cmd) {
	var cmd *redis.Cmd
	if eval {
		cmd = script.Eval(ctx, pipe, keys, args...)
	} else {
		cmd = script.EvalSha(ctx, pipe, keys, args...)
	}
	wait := pipe.Do(ctx, "wait", r.MinReplicas, r.Timeout.Milliseconds())
	_, _ = pipe.Exec(ctx) // errors are read from each command
	return cmd, wait
}

// pipelineFor returns a pipeline that runs on the one connection that
// serves key.
func (r Replication) pipelineFor(ctx context.Context, key string) (redis.Pipeliner, error) {
	switch c := r.RDB.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, err
		}
		return node.Pipeline(), nil
	case *redis.Client:
		return c.Pipeline(), nil
	}
	return nil, fmt.Errorf("redislock: MinReplicas needs a *redis.Client or *redis.ClusterClient, not %T", r.RDB)
}

func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
}

// undoAcquire releases the grant that was not replicated, on a context that
// outlives the caller's (which may be what just timed out).
func (l *Locker) undoAcquire(ctx context.Context, tenant, resource, owner string, token int64) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	// A failure here leaves the lease to expire by its TTL: never held
	// twice, only unavailable for a while.
	_, _ = l.release(uctx, tenant, resource, owner, token)
}
