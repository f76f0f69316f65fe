package auth_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
)

const (
	rlOpsKey    = "lg_ratelimit-test-ops-key-00001"
	rlClientKey = "lg_ratelimit-test-client-key-001"
	rlWrongKey  = "lg_ratelimit-test-not-configured"
	rlPrefix    = "rl:"
)

var rlNow = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// refusals records what a Keyring counts.
type refusals struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *refusals) count(via, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[via+"/"+reason]++
}

func (r *refusals) get(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[key]
}

type rlEnv struct {
	mini *miniredis.Miniredis
	rdb  *redis.Client
	ring *auth.Keyring
	seen *refusals
}

func newRLEnv(t *testing.T) *rlEnv {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	var keys []auth.Key
	for _, e := range []string{
		"oncall:ops:shop:" + auth.HashKey(rlOpsKey),
		"checkout:client:shop:" + auth.HashKey(rlClientKey),
	} {
		k, err := auth.ParseEntry(e)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	ring, err := auth.New(keys, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := &refusals{n: map[string]int{}}
	ring.CountRefusals(seen.count)
	return &rlEnv{mini: m, rdb: rdb, ring: ring, seen: seen}
}

func (env *rlEnv) sessions() *auth.Sessions {
	return auth.NewSessionsWith(env.ring, auth.SessionOptions{Redis: env.rdb, Prefix: rlPrefix})
}

// login opens a session of the ops key on s from client at rlNow.
func login(t *testing.T, s *auth.Sessions, client string) (cookie string, expires time.Time) {
	t.Helper()
	_, cookie, expires, err := s.Login(context.Background(), rlOpsKey, client, rlNow)
	if err != nil {
		t.Fatal(err)
	}
	return cookie, expires
}

func codeOf(err error) leasegate.Code {
	if err == nil {
		return ""
	}
	e, _ := leasegate.ErrorOf(err)
	return e.Code
}

func TestLoginLimitFailsClosedWithoutRedis(t *testing.T) {
	t.Parallel()
	env := newRLEnv(t)
	s := env.sessions()
	ctx := context.Background()
	cookie, _ := login(t, s, "192.0.2.1")
	env.mini.SetError("LOADING Redis is loading the dataset in memory")

	t.Run("a login with the right key is refused as unavailable, with a Retry-After", func(t *testing.T) {
		p, c, _, err := s.Login(ctx, rlOpsKey, "192.0.2.1", rlNow)
		e, _ := leasegate.ErrorOf(err)
		if e.Code != leasegate.CodeUnavailable || e.RetryAfter <= 0 || c != "" || p.KeyName != "" {
			t.Errorf("got %v (retry %v), cookie %q, principal %+v; want unavailable, no session", err, e.RetryAfter, c, p)
		}
	})
	t.Run("a session cannot be opened, and is not called invalid", func(t *testing.T) {
		if _, err := s.Open(ctx, cookie, rlNow); codeOf(err) != leasegate.CodeUnavailable {
			t.Errorf("got %v, want unavailable", err)
		}
	})
	t.Run("a logout says it was not recorded", func(t *testing.T) {
		if err := s.Logout(ctx, cookie, rlNow); codeOf(err) != leasegate.CodeUnavailable {
			t.Errorf("got %v, want unavailable", err)
		}
	})
	if got := env.seen.get("login/unavailable"); got != 1 {
		t.Errorf("got %d login/unavailable refusals counted, want 1", got)
	}
}

func TestLoginLimitWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("on Redis the window is the counter's TTL, from the first failure", func(t *testing.T) {
		env := newRLEnv(t)
		s := env.sessions()
		for i := 0; i < 5; i++ {
			if _, _, _, err := s.Login(ctx, rlWrongKey, "192.0.2.2", rlNow); codeOf(err) != leasegate.CodeUnauthorized {
				t.Fatalf("failure %d: got %v, want unauthorized", i+1, err)
			}
		}
		env.mini.FastForward(10 * time.Minute)
		_, _, _, err := s.Login(ctx, rlOpsKey, "192.0.2.2", rlNow)
		e, _ := leasegate.ErrorOf(err)
		if e.Code != leasegate.CodeRateLimited || e.RetryAfter < 4*time.Minute || e.RetryAfter > 5*time.Minute {
			t.Fatalf("got %v, Retry-After %v; want rate-limited for the 5 min left", err, e.RetryAfter)
		}
		env.mini.FastForward(5*time.Minute + time.Second)
		if _, _, _, err := s.Login(ctx, rlOpsKey, "192.0.2.2", rlNow); err != nil {
			t.Errorf("after the window: got %v, want a session", err)
		}
	})

	t.Run("in memory the window follows the clock passed in", func(t *testing.T) {
		env := newRLEnv(t)
		s := auth.NewSessionsWith(env.ring, auth.SessionOptions{MaxFailures: 2, Window: time.Minute})
		for i := 0; i < 2; i++ {
			s.Login(ctx, rlWrongKey, "192.0.2.3", rlNow)
		}
		if _, _, _, err := s.Login(ctx, rlOpsKey, "192.0.2.3", rlNow.Add(59*time.Second)); codeOf(err) != leasegate.CodeRateLimited {
			t.Errorf("within the window: got %v, want rate-limited", err)
		}
		if _, _, _, err := s.Login(ctx, rlOpsKey, "192.0.2.3", rlNow.Add(time.Minute)); err != nil {
			t.Errorf("after the window: got %v, want a session", err)
		}
	})

	t.Run("a success takes its count back but never leaves a counter without a TTL", func(t *testing.T) {
		env := newRLEnv(t)
		s := env.sessions()
		for i := 0; i < 3; i++ {
			login(t, s, "192.0.2.4")
		}
		key := keyspace.Space{Prefix: rlPrefix}.LoginFailures("", keyspace.LoginByAddress, "192.0.2.4")
		if got, _ := env.mini.Get(key); got != "0" {
			t.Errorf("got count %q, want 0", got)
		}
		if ttl := env.mini.TTL(key); ttl <= 0 {
			t.Errorf("got TTL %v, want the window's", ttl)
		}
	})
}

// Parallel guesses cannot slip past the limit: each is counted before its
// key is looked at.
func TestLoginLimitHoldsUnderConcurrentGuesses(t *testing.T) {
	t.Parallel()
	env := newRLEnv(t)
	s := env.sessions()
	var wg sync.WaitGroup
	codes := make(chan leasegate.Code, 40)
	for i := 0; i < cap(codes); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _, err := s.Login(context.Background(), rlWrongKey, "192.0.2.5", rlNow)
			codes <- codeOf(err)
		}()
	}
	wg.Wait()
	close(codes)
	got := map[leasegate.Code]int{}
	for c := range codes {
		got[c]++
	}
	if got[leasegate.CodeUnauthorized] != auth.DefaultLoginMaxFailures || got[leasegate.CodeRateLimited] != cap(codes)-auth.DefaultLoginMaxFailures {
		t.Errorf("got %v, want %d keys checked and the rest rate-limited", got, auth.DefaultLoginMaxFailures)
	}
}

func TestLoginLimitPerKeyName(t *testing.T) {
	t.Parallel()
	env := newRLEnv(t)
	s := env.sessions()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, _, _, err := s.Login(ctx, rlClientKey, "192.0.2."+strconv.Itoa(10+i), rlNow); codeOf(err) != leasegate.CodeForbidden {
			t.Fatalf("refusal %d: got %v, want forbidden", i+1, err)
		}
	}
	if _, _, _, err := s.Login(ctx, rlClientKey, "192.0.2.99", rlNow); codeOf(err) != leasegate.CodeRateLimited {
		t.Errorf("from a fresh address: got %v, want rate-limited by the key's name", err)
	}
	key := keyspace.Space{Prefix: rlPrefix}.LoginFailures("shop", keyspace.LoginByKey, "checkout")
	if got, _ := env.mini.Get(key); got != "6" {
		t.Errorf("got %q failures under %s, want 6", got, key)
	}
	if got := env.seen.get("login/rate_limited_key"); got != 1 {
		t.Errorf("got %d login/rate_limited_key counted, want 1", got)
	}
}

func TestLogoutRevocation(t *testing.T) {
	t.Parallel()
	env := newRLEnv(t)
	s := env.sessions()
	ctx := context.Background()
	cookie, expires := login(t, s, "192.0.2.6")
	_, other, _, _ := s.Login(ctx, rlOpsKey, "192.0.2.6", rlNow)
	now := rlNow.Add(time.Hour)
	if err := s.Logout(ctx, cookie, now); err != nil {
		t.Fatal(err)
	}

	t.Run("the ended session is refused by this and another gateway", func(t *testing.T) {
		for _, g := range []*auth.Sessions{s, env.sessions()} {
			if _, err := g.Open(ctx, cookie, now); codeOf(err) != leasegate.CodeUnauthorized {
				t.Errorf("got %v, want unauthorized", err)
			}
		}
		if got := env.seen.get("session/revoked"); got != 2 {
			t.Errorf("got %d session/revoked counted, want 2", got)
		}
	})
	t.Run("a session of the same key from the same second stays", func(t *testing.T) {
		if other == cookie {
			t.Fatal("got the same cookie value for two logins, want a nonce")
		}
		if _, err := s.Open(ctx, other, now); err != nil {
			t.Errorf("got %v, want it open", err)
		}
	})
	t.Run("the record lives as long as the session would have, plus the skew", func(t *testing.T) {
		var ttl time.Duration
		for _, k := range env.mini.Keys() {
			if len(k) > len(":revoked") && k[len(k)-len(":revoked"):] == ":revoked" {
				ttl = env.mini.TTL(k)
			}
		}
		if want := expires.Sub(now) + time.Minute; ttl != want {
			t.Errorf("got TTL %v, want %v", ttl, want)
		}
	})
	t.Run("a session issued before the nonce (three fields) can be logged out too", func(t *testing.T) {
		h := sha256.Sum256([]byte(rlOpsKey))
		payload := base64.RawURLEncoding.EncodeToString([]byte("oncall|shop|" + strconv.FormatInt(now.Add(time.Hour).Unix(), 10)))
		m := hmac.New(sha256.New, h[:])
		m.Write([]byte("leasegate ops session v1\x00" + payload))
		legacy := payload + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
		if _, err := s.Open(ctx, legacy, now); err != nil {
			t.Fatalf("got %v, want the legacy session open", err)
		}
		if err := s.Logout(ctx, legacy, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Open(ctx, legacy, now); codeOf(err) != leasegate.CodeUnauthorized {
			t.Errorf("after logout: got %v, want unauthorized", err)
		}
	})
	t.Run("logging out a value that is no session writes nothing", func(t *testing.T) {
		before := len(env.mini.Keys())
		if err := s.Logout(ctx, "forged.value", now); err != nil {
			t.Errorf("got %v, want nil", err)
		}
		if after := len(env.mini.Keys()); after != before {
			t.Errorf("got %d keys, want %d", after, before)
		}
	})
}

// The same limiter and logout on a real redis-server (MULTI, WATCH and
// TTLs as Redis has them, not as miniredis does). Keys carry a prefix of
// their own; nothing is flushed.
func TestLoginStateOnRealRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	env := newRLEnv(t)
	prefix := "rltest-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	s := auth.NewSessionsWith(env.ring, auth.SessionOptions{Redis: rdb, Prefix: prefix, Window: time.Hour})
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, _, _, err := s.Login(ctx, rlWrongKey, "192.0.2.50", rlNow); codeOf(err) != leasegate.CodeUnauthorized {
			t.Fatalf("failure %d: got %v, want unauthorized", i+1, err)
		}
	}
	_, _, _, err := s.Login(ctx, rlOpsKey, "192.0.2.50", rlNow)
	if e, _ := leasegate.ErrorOf(err); e == nil || e.Code != leasegate.CodeRateLimited || e.RetryAfter <= 59*time.Minute {
		t.Fatalf("got %v, want rate-limited for about an hour", err)
	}
	_, cookie, _, err := s.Login(ctx, rlOpsKey, "192.0.2.51", rlNow)
	if err != nil {
		t.Fatal(err)
	}
	addr := keyspace.Space{Prefix: prefix}.LoginFailures("", keyspace.LoginByAddress, "192.0.2.51")
	if n, err := rdb.Get(ctx, addr).Int(); err != nil || n != 0 {
		t.Errorf("got count %d (%v) after a success, want 0", n, err)
	}
	if ttl := rdb.PTTL(ctx, addr).Val(); ttl <= 0 {
		t.Errorf("got PTTL %v, want the window's", ttl)
	}
	if err := s.Logout(ctx, cookie, rlNow); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, cookie, rlNow); codeOf(err) != leasegate.CodeUnauthorized {
		t.Errorf("after logout: got %v, want unauthorized", err)
	}
}
