package scriptreply

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
)

var errBad = errors.New("test: unexpected script reply")

var d = Decoder{Bad: errBad}

func TestFlaggedRefusesUndocumentedShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"a bare integer", int64(1)},
		{"an empty array", []any{}},
		{"an array whose flag is a string", []any{"1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := d.Flagged("op", tc.v); !errors.Is(err, errBad) {
				t.Errorf("got %v, want an error wrapping the engine's ErrBadReply", err)
			}
		})
	}
	arr, flag, err := d.Flagged("op", []any{int64(-1), "x"})
	if err != nil || flag != -1 || len(arr) != 2 {
		t.Errorf("got %v, %d, %v; want the array with flag -1", arr, flag, err)
	}
}

func TestLeaseReadsTokenAndTimes(t *testing.T) {
	t.Parallel()
	tok, from, until, err := d.Lease([]any{"7", "1000", "31000"})
	if err != nil || tok != 7 || !from.Equal(time.UnixMilli(1000)) || until.Sub(from) != 30*time.Second || from.Location() != time.UTC {
		t.Errorf("got %d, %v, %v, %v; want token 7 from 1s for 30s in UTC", tok, from, until, err)
	}
	if _, _, _, err := d.Lease([]any{int64(7), "1000", "31000"}); !errors.Is(err, errBad) {
		t.Errorf("got %v, want an integer token refused", err)
	}
}

func TestReleaseMapsEveryOutcome(t *testing.T) {
	t.Parallel()
	for v, want := range map[int64]leasegate.ReleaseResult{1: leasegate.Released, 0: leasegate.NotFound, -1: leasegate.Forbidden} {
		if got, err := d.Release("release", v); err != nil || got != want {
			t.Errorf("Release(%d): got %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := d.Release("release", int64(2)); !errors.Is(err, errBad) {
		t.Errorf("Release(2): got %v, want ErrBadReply", err)
	}
}

func TestHelpers(t *testing.T) {
	t.Parallel()
	if err := Unavailable(errors.New("down")); !errors.Is(err, leasegate.ErrUnavailable) {
		t.Errorf("Unavailable: got %v, want ErrUnavailable", err)
	}
	if got := TokenArg(0); got != "" {
		t.Errorf("TokenArg(0): got %q, want empty (any token)", got)
	}
	if got := TokenArg(42); got != "42" {
		t.Errorf("TokenArg(42): got %q, want 42", got)
	}
}

func TestRunFlaggedRunsTheScriptAndReadsTheFlag(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()

	v, arr, flag, err := d.RunFlagged(ctx, rdb, redis.NewScript("return {1, ARGV[1], KEYS[1]}"), "ok", []string{"k"}, "a")
	if err != nil || flag != 1 || len(arr) != 3 || arr[1] != "a" || arr[2] != "k" || v == nil {
		t.Errorf("got %v, %v, %d, %v; want {1, a, k} with flag 1", v, arr, flag, err)
	}
	if _, _, _, err := d.RunFlagged(ctx, rdb, redis.NewScript("return 'x'"), "shape", nil); !errors.Is(err, errBad) {
		t.Errorf("a reply of another shape: got %v, want errBad", err)
	}
	if _, _, _, err := d.RunFlagged(ctx, rdb, redis.NewScript("return redis.error_reply('BOOM on purpose')"), "boom", nil); !errors.Is(err, leasegate.ErrUnavailable) {
		t.Errorf("a script error: got %v, want ErrUnavailable", err)
	}
}
