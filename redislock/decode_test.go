package redislock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
)

type reply = []interface{}

func TestAcquireDecodesOnlyTheDocumentedReply(t *testing.T) {
	t.Parallel()
	good := "1 7 1000 2000 1000 svc-a"
	t.Run("the documented reply decodes", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: good}, Config{}).acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		want := leasegate.Lock{Resource: "r", Owner: "svc-a", Token: 7,
			AcquiredAt: time.UnixMilli(1000).UTC(), ExpiresAt: time.UnixMilli(2000).UTC()}
		if !res.Acquired || res.Lock != want {
			t.Errorf("got %+v, want acquired %+v", res, want)
		}
	})
	t.Run("a renewal of the caller's own lease is a grant", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: "3 7 1000 2500 1500 svc-a"}, Config{}).
			acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
		if err != nil || !res.Acquired || res.Lock.Token != 7 || !res.Lock.AcquiredAt.Equal(time.UnixMilli(1000)) {
			t.Errorf("got %+v, %v; want acquired under token 7 since 1000", res, err)
		}
	})
	t.Run("a refusal carries the holder's remaining time", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: "0 7 1000 2000 1500 svc-b"}, Config{}).
			acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if res.Acquired || res.RetryAfter != 500*time.Millisecond {
			t.Errorf("got acquired %v retry %v, want false and 500ms", res.Acquired, res.RetryAfter)
		}
	})
	t.Run("a lock delay's refusal waits until the delay ends", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: "2 7 1000 2000 2500 3000 svc b"}, Config{}).
			acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if res.Acquired || !res.Delayed || res.RetryAfter != 500*time.Millisecond || res.Lock.Owner != "svc b" ||
			!res.Lock.ExpiresAt.Equal(time.UnixMilli(2000)) {
			t.Errorf("got %+v, want delayed, retry 500ms, the expired lease of \"svc b\"", res)
		}
	})
	t.Run("an empty owner comes back empty", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: "1 7 1000 2000 1000 "}, Config{}).
			acquire(context.Background(), "", "r", "", time.Second, 0, 0)
		if err != nil || !res.Acquired || res.Lock.Owner != "" {
			t.Errorf("got %+v, %v, want granted to the empty owner", res, err)
		}
	})
	t.Run("the owner comes back verbatim, spaces and all", func(t *testing.T) {
		res, err := New(redistest.ReplyScripter{Reply: "0 7 1000 2000 1500 svc b  1 2 "}, Config{}).
			acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
		if err != nil || res.Lock.Owner != "svc b  1 2 " {
			t.Errorf("got owner %q, %v, want %q", res.Lock.Owner, err, "svc b  1 2 ")
		}
	})
	bad := map[string]interface{}{
		"not a string":            reply{int64(1), "7", "1000", "2000", "svc-a", "1000"},
		"nil":                     nil,
		"an integer":              int64(1),
		"empty":                   "",
		"owner is missing":        "1 7 1000 2000 1000",
		"flag out of range":       "4 7 1000 2000 1000 svc-a",
		"a delay without free_at": "2 7 1000 2000 1000 svc-a",
		"flag is negative":        "-1 7 1000 2000 1000 svc-a",
		"token is not a number":   "1 seven 1000 2000 1000 svc-a",
		"time has a fraction":     "1 7 1000.5 2000 1000 svc-a",
		"now is not a number":     "1 7 1000 2000 later svc-a",
		"token overflows int64":   "1 99999999999999999999 1000 2000 1000 svc-a",
		"expires_at is missing":   "1 7 1000  1000 svc-a",
		"fields are comma-joined": "1,7,1000,2000,1000,svc-a",
	}
	for name, reply := range bad {
		t.Run("a reply whose "+name+" is a bad reply", func(t *testing.T) {
			res, err := New(redistest.ReplyScripter{Reply: reply}, Config{}).acquire(context.Background(), "", "r", "svc-a", time.Second, 0, 0)
			if !errors.Is(err, ErrBadReply) {
				t.Errorf("got %v, want ErrBadReply", err)
			}
			if res.Acquired {
				t.Errorf("got Acquired true, want never a grant on a bad reply")
			}
		})
	}
}

func TestDecodeHeld(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply interface{}
		want  error
	}{
		{"{0} is not held", reply{int64(0)}, leasegate.ErrLockNotHeld},
		{"{-1} is forbidden", reply{int64(-1)}, leasegate.ErrLockForbidden},
		{"a held lease decodes", reply{int64(1), "7", "1000", "2000", "svc-a"}, nil},
		{"a string is a bad reply", "OK", ErrBadReply},
		{"nil is a bad reply", nil, ErrBadReply},
		{"an empty list is a bad reply", reply{}, ErrBadReply},
		{"a string flag is a bad reply", reply{"1", "7", "1000", "2000", "svc-a"}, ErrBadReply},
		{"{0} with extra fields is a bad reply", reply{int64(0), "7"}, ErrBadReply},
		{"{-1} with extra fields is a bad reply", reply{int64(-1), "7"}, ErrBadReply},
		{"{1} without the lease is a bad reply", reply{int64(1)}, ErrBadReply},
		{"{1} with a short lease is a bad reply", reply{int64(1), "7", "1000", "2000"}, ErrBadReply},
		{"an unknown flag is a bad reply", reply{int64(2), "7", "1000", "2000", "svc-a"}, ErrBadReply},
		{"a numeric token is a bad reply", reply{int64(1), int64(7), "1000", "2000", "svc-a"}, ErrBadReply},
		{"a non-numeric time is a bad reply", reply{int64(1), "7", "soon", "2000", "svc-a"}, ErrBadReply},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lk, err := decodeHeld("status", "r", tc.reply)
			if tc.want == nil {
				want := leasegate.Lock{Resource: "r", Owner: "svc-a", Token: 7,
					AcquiredAt: time.UnixMilli(1000).UTC(), ExpiresAt: time.UnixMilli(2000).UTC()}
				if err != nil || lk != want {
					t.Errorf("got %+v, %v; want %+v", lk, err, want)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("status and renew use it", func(t *testing.T) {
		l := New(redistest.ReplyScripter{Reply: reply{int64(3)}}, Config{})
		if _, err := l.status(context.Background(), "", "r"); !errors.Is(err, ErrBadReply) {
			t.Errorf("status: got %v, want ErrBadReply", err)
		}
		if _, err := l.renew(context.Background(), "", "r", "o", 0, time.Second); !errors.Is(err, ErrBadReply) {
			t.Errorf("renew: got %v, want ErrBadReply", err)
		}
	})
}

func TestReleaseDecodesOnlyTheDocumentedReply(t *testing.T) {
	t.Parallel()
	// A release answers 1 + the hold time in milliseconds.
	for reply, want := range map[int64]leasegate.ReleaseResult{1: leasegate.Released, 2: leasegate.Released,
		1 << 40: leasegate.Released, 0: leasegate.NotFound, -1: leasegate.Forbidden} {
		got, err := New(redistest.ReplyScripter{Reply: reply}, Config{}).release(context.Background(), "", "r", "o", 0)
		if err != nil || got != want {
			t.Errorf("reply %d: got %v, %v; want %v", reply, got, err, want)
		}
	}
	for name, reply := range map[string]interface{}{
		"a string": "1",
		"a list":   reply{int64(1)},
		"nil":      nil,
		"-2":       int64(-2),
	} {
		got, err := New(redistest.ReplyScripter{Reply: reply}, Config{}).release(context.Background(), "", "r", "o", 0)
		if !errors.Is(err, ErrBadReply) || got == leasegate.Released {
			t.Errorf("reply %s: got %v, %v; want ErrBadReply and not Released", name, got, err)
		}
	}
}

func TestReleaseReportsTheHoldTime(t *testing.T) {
	t.Parallel()
	var got time.Duration
	l := New(redistest.ReplyScripter{Reply: int64(1501)}, Config{OnRelease: func(_, _ string, held time.Duration) { got = held }})
	if r, err := l.release(context.Background(), "", "r", "o", 0); err != nil || r != leasegate.Released {
		t.Fatalf("got %v, %v; want Released", r, err)
	}
	if got != 1500*time.Millisecond {
		t.Errorf("got hold time %v, want 1.5s", got)
	}
}

func TestReleaseResultString(t *testing.T) {
	t.Parallel()
	for r, want := range map[leasegate.ReleaseResult]string{
		leasegate.Released: "released", leasegate.NotFound: "not_found", leasegate.Forbidden: "forbidden", 0: "ReleaseResult(0)", 9: "ReleaseResult(9)",
	} {
		if got := r.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
