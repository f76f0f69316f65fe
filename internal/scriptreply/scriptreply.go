// Package scriptreply decodes the replies of leasegate's Lua scripts
// (package scripts documents each shape) for the Redis engines
// (redislock, semaphore, claim, abuse). Every helper checks its type assertions and reports a surprise as
// an error wrapping the calling engine's ErrBadReply, never a panic.
package scriptreply

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
)

// Unavailable wraps a Redis failure (connection, timeout, script error)
// in leasegate.ErrUnavailable.
func Unavailable(err error) error {
	return fmt.Errorf("%w: %w", leasegate.ErrUnavailable, err)
}

// TokenArg is a fencing token as a script argument: "" for 0 (any token
// of the owner).
func TokenArg(token int64) string {
	if token == 0 {
		return ""
	}
	return strconv.FormatInt(token, 10)
}

// Decoder decodes replies for one engine: Bad is that engine's
// ErrBadReply sentinel, which every decoding error wraps.
type Decoder struct {
	Bad error
}

// Reply is the error of a reply in a shape script op never documents.
func (d Decoder) Reply(op string, v any) error {
	return fmt.Errorf("%w: %s: %v", d.Bad, op, v)
}

// Flagged reads the {flag, ...} replies: a non-empty array whose first
// element is an integer.
func (d Decoder) Flagged(op string, v any) ([]any, int64, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, 0, d.Reply(op, v)
	}
	flag, ok := arr[0].(int64)
	if !ok {
		return nil, 0, d.Reply(op, v)
	}
	return arr, flag, nil
}

// RunFlagged runs script op on keys with args and reads its {flag, ...}
// reply (Flagged). A Redis failure is Unavailable, a reply of another
// shape wraps Bad; v is the raw reply, for the caller's own shape checks.
func (d Decoder) RunFlagged(ctx context.Context, rdb redis.Scripter, script *redis.Script, op string, keys []string, args ...any) (v any, arr []any, flag int64, err error) {
	v, err = script.Run(ctx, rdb, keys, args...).Result()
	if err != nil {
		return nil, nil, 0, Unavailable(err)
	}
	arr, flag, err = d.Flagged(op, v)
	return v, arr, flag, err
}

// Int reads a number the script sent as a decimal string.
func (d Decoder) Int(v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%w: %T is no decimal string", d.Bad, v)
	}
	return strconv.ParseInt(s, 10, 64)
}

// Lease reads {token, from_ms, until_ms}: a fencing token and two Redis
// times in milliseconds, returned in UTC.
func (d Decoder) Lease(f []any) (token int64, from, until time.Time, err error) {
	tok, err1 := d.Int(f[0])
	at, err2 := d.Int(f[1])
	exp, err3 := d.Int(f[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, time.Time{}, time.Time{}, fmt.Errorf("%w: %v", d.Bad, err)
	}
	return tok, time.UnixMilli(at).UTC(), time.UnixMilli(exp).UTC(), nil
}

// Release reads the {1 released, 0 not found, -1 forbidden} reply of a
// release script.
func (d Decoder) Release(op string, v any) (leasegate.ReleaseResult, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, d.Reply(op, v)
	}
	switch n {
	case 1:
		return leasegate.Released, nil
	case 0:
		return leasegate.NotFound, nil
	case -1:
		return leasegate.Forbidden, nil
	}
	return 0, d.Reply(op, v)
}
