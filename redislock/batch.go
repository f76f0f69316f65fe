package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batcher sends the script calls of concurrent callers to Redis together:
// whatever calls queue up while a pipeline is on the wire go out as the
// next pipeline (auto-pipelining). Each caller still gets its own reply
// and error. It implements redis.Scripter, so a Locker runs on it
// unchanged: New(NewBatcher(rdb, opts), ...).
//
// Guarantees:
//   - A command is written to Redis at most once. The Batcher never
//     re-sends, and NewBatcher refuses a client that would (MaxRetries
//     above 0; server/redis.go explains why retries are off).
//   - A pipeline that fails (connection lost, timeout) fails each of its
//     commands with that error; the Locker turns it into ErrUnavailable,
//     never a grant. As with one call, such a command may or may not have
//     run (docs/fencing.md, limit 5).
//   - A caller whose context ends before its command is taken from the
//     queue gets the context's error and its command is never sent; one
//     whose context ends while its pipeline is on the wire gets the
//     context's error at once.
//   - Each pipeline is bounded by BatchOptions.Timeout (one deadline per
//     pipeline, not one per call).
//
// EVALSHA's NOSCRIPT answer means the script did not run, so Script.Run's
// fallback to EVAL goes through the Batcher again, like any other call.
type Batcher struct {
	rdb  pipeliner
	opts BatchOptions
	reqs chan *batchCall

	// mu orders queueing against Close: a call queues under the read
	// lock only while isClosed is false, so nothing is queued after the
	// senders have drained the queue and left.
	mu        sync.RWMutex
	isClosed  bool
	closeOnce sync.Once
	closed    chan struct{}
	wg        sync.WaitGroup
}

// pipeliner is what the Batcher needs of a client: pipelines for the
// script calls, and the client itself for SCRIPT EXISTS / LOAD.
type pipeliner interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
	Process(ctx context.Context, cmd redis.Cmder) error
}

// BatchOptions configure a Batcher.
type BatchOptions struct {
	// Senders is how many pipelines may be on the wire at once (default 2):
	// while one waits for its replies, the next fills up.
	Senders int
	// MaxBatch caps the commands in one pipeline (default 128).
	MaxBatch int
	// Timeout bounds each pipeline (default DefaultOpTimeout).
	Timeout time.Duration
}

// ErrBatcherClosed is the error of a call made after Close; it was never
// sent.
var ErrBatcherClosed = errors.New("redislock: batcher closed")

// batchCall is one queued call. done (buffered) receives once, when cmd
// has its answer. Calls are pooled: a caller that got its answer puts its
// call back; one that left early does not (the sender may still hold it).
type batchCall struct {
	ctx  context.Context
	cmd  *redis.Cmd
	done chan struct{}
}

var batchCalls = sync.Pool{New: func() any { return &batchCall{done: make(chan struct{}, 1)} }}

// NewBatcher starts a Batcher on rdb (a *redis.Client or
// *redis.ClusterClient). Close it before closing rdb.
func NewBatcher(rdb redis.UniversalClient, opts BatchOptions) (*Batcher, error) {
	if n := maxRetries(rdb); n > 0 {
		return nil, fmt.Errorf("redislock: auto-pipelining needs a client that never re-sends a command (MaxRetries -1), this one retries %d times", n)
	}
	if opts.Senders <= 0 {
		opts.Senders = 2
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 128
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultOpTimeout
	}
	b := &Batcher{
		rdb:    rdb,
		opts:   opts,
		reqs:   make(chan *batchCall, opts.MaxBatch*opts.Senders),
		closed: make(chan struct{}),
	}
	for range opts.Senders {
		b.wg.Add(1)
		go b.send()
	}
	return b, nil
}

func maxRetries(rdb redis.UniversalClient) int {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().MaxRetries
	case *redis.ClusterClient:
		return max(c.Options().MaxRetries, c.Options().MaxRedirects)
	}
	return 0
}

// Close stops the senders after the calls already queued have been
// answered. Later calls fail with ErrBatcherClosed, unsent.
func (b *Batcher) Close() {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.isClosed = true
		b.mu.Unlock()
		close(b.closed)
		b.wg.Wait()
		// Anyone who queued after the senders left: answer unsent.
		for {
			select {
			case c := <-b.reqs:
				c.cmd.SetErr(ErrBatcherClosed)
				c.done <- struct{}{}
			default:
				return
			}
		}
	})
}

func (b *Batcher) send() {
	defer b.wg.Done()
	batch := make([]*batchCall, 0, b.opts.MaxBatch)
	// One pipeline per sender, reused: Exec leaves it empty.
	pipe := b.rdb.Pipeline()
	for {
		var first *batchCall
		select {
		case first = <-b.reqs:
		case <-b.closed:
			// Drain what is queued, then leave.
			select {
			case first = <-b.reqs:
			default:
				return
			}
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < b.opts.MaxBatch {
			select {
			case c := <-b.reqs:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		b.exec(pipe, batch)
		clear(batch)
	}
}

// exec sends one pipeline (a lone call: one command) and answers each of
// its callers.
func (b *Batcher) exec(pipe redis.Pipeliner, batch []*batchCall) {
	n := 0
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			// Never sent: the caller has gone.
			c.cmd.SetErr(err)
			c.done <- struct{}{}
			continue
		}
		batch[n] = c
		n++
	}
	if n > 0 {
		// The pipeline's context bounds it by Timeout and carries the
		// first caller's values, not its cancellation (the others'
		// calls ride on it too): with tracing on, its Redis span is a
		// child of the first caller's request span
		// (docs/observability.md).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), b.opts.Timeout)
		if n == 1 {
			_ = b.rdb.Process(ctx, batch[0].cmd)
		} else {
			for _, c := range batch[:n] {
				_ = pipe.Process(c.ctx, c.cmd)
			}
			// Each command carries its own error (the pipeline's, if it
			// failed as a whole); Exec's return value is the first of them.
			_, _ = pipe.Exec(ctx)
		}
		cancel()
	}
	for _, c := range batch[:n] {
		c.done <- struct{}{}
	}
}

// do queues cmd and waits for its answer or for ctx.
func (b *Batcher) do(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	if err := ctx.Err(); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	c := batchCalls.Get().(*batchCall)
	c.ctx, c.cmd = ctx, cmd
	b.mu.RLock()
	if b.isClosed {
		b.mu.RUnlock()
		b.putCall(c)
		cmd.SetErr(ErrBatcherClosed)
		return cmd
	}
	select {
	case b.reqs <- c:
		b.mu.RUnlock()
	case <-ctx.Done():
		b.mu.RUnlock()
		b.putCall(c)
		cmd.SetErr(ctx.Err())
		return cmd
	}
	select {
	case <-c.done:
		b.putCall(c)
		return cmd
	case <-ctx.Done():
		// The command may still run; its reply is dropped. The caller
		// gets an error, so it is never reported as a grant. A fresh Cmd,
		// because the sender still writes into the queued one.
		out := redis.NewCmd(ctx)
		out.SetErr(ctx.Err())
		return out
	}
}

func (b *Batcher) putCall(c *batchCall) {
	c.ctx, c.cmd = nil, nil
	batchCalls.Put(c)
}

func evalArgs(name, script string, keys []string, args []interface{}) []interface{} {
	a := make([]interface{}, 3, 3+len(keys)+len(args))
	a[0], a[1], a[2] = name, script, len(keys)
	for _, k := range keys {
		a = append(a, k)
	}
	return append(a, args...)
}

// EvalSha implements redis.Scripter.
func (b *Batcher) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return b.do(ctx, redis.NewCmd(ctx, evalArgs("evalsha", sha1, keys, args)...))
}

// Eval implements redis.Scripter.
func (b *Batcher) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return b.do(ctx, redis.NewCmd(ctx, evalArgs("eval", script, keys, args)...))
}

// EvalShaRO implements redis.Scripter.
func (b *Batcher) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return b.do(ctx, redis.NewCmd(ctx, evalArgs("evalsha_ro", sha1, keys, args)...))
}

// EvalRO implements redis.Scripter.
func (b *Batcher) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return b.do(ctx, redis.NewCmd(ctx, evalArgs("eval_ro", script, keys, args)...))
}

// ScriptExists implements redis.Scripter (not batched).
func (b *Batcher) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return b.rdb.ScriptExists(ctx, hashes...)
}

// ScriptLoad implements redis.Scripter (not batched).
func (b *Batcher) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return b.rdb.ScriptLoad(ctx, script)
}

var _ redis.Scripter = (*Batcher)(nil)
