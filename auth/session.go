package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
)

// Sessions is the /ops/ page's browser login. A browser cannot send
// "Authorization: Bearer", so with API keys an operator pastes an ops key
// into the form at /ops/login once and gets a session cookie that the
// page's own routes (GET /ops/ and its form posts) accept; no other route
// looks at it, so the JSON API stays Bearer-only and has no CSRF surface.
//
// The session is stateless, so any number of gateways behind a load
// balancer that share the key file (and nothing else) accept each other's
// sessions:
//
//	value   = payload "." base64url(HMAC-SHA256(secret, context 0x00 payload))
//	payload = base64url(key name "|" tenant "|" expiry in Unix seconds "|" nonce)
//
// secret is the key's stored SHA-256, or, when a session secret is
// configured (--ops-session-secret), HMAC-SHA256(secret, keyContext 0x00
// key hash): then reading the key file is not enough to forge a session,
// and every gateway sharing the file and the secret still accepts the
// others' sessions. The key is looked up by name at every request:
// removing or changing the key, or giving its name another tenant or the
// client role, ends its sessions at once. MACs are compared with
// hmac.Equal. Expiry is the gateway's clock (keep instances on NTP); an
// expiry further ahead than now + the TTL is refused too, so shortening
// the TTL shortens sessions already issued.
//
// Two things are not stateless, and live in Redis so that every gateway
// sees them (docs/abuse.md#logging-in-to-the-page):
//
//   - Logins are limited. Every login counts against its client address
//     before the key is even looked at; a login that succeeds takes its
//     count back. Past MaxFailures in a window the address gets
//     rate-limited (429) without its key being checked. A key that is
//     configured but refused for its role also counts against its name,
//     from any address. (An unknown key has no name to count against.)
//   - Logout ends the session: its id (a hash of its MAC) is recorded
//     until the session would have expired, and Open refuses it.
//
// Without Redis to count in or to ask, a login is refused (503) and a
// session is not opened: never an unlimited login.
type Sessions struct {
	keys   *Keyring
	ttl    time.Duration
	secret string

	state       loginState
	space       keyspace.Space
	maxFailures int64
	window      time.Duration
}

// DefaultSessionTTL is how long a login lasts unless configured.
const DefaultSessionTTL = 8 * time.Hour

// Defaults of the login limit.
const (
	DefaultLoginMaxFailures = 5
	DefaultLoginWindow      = 15 * time.Minute
)

// SessionOptions configure the /ops/ page's logins.
type SessionOptions struct {
	// TTL is how long a login lasts (0: DefaultSessionTTL).
	TTL time.Duration
	// Secret, when not empty, is mixed into every MAC.
	Secret string
	// Redis keeps the failed-login counters and ended sessions, shared by
	// every gateway on it. nil keeps them in this process only.
	Redis redis.UniversalClient
	// Prefix starts the Redis keys (keyspace.Space).
	Prefix string
	// MaxFailures is how many failed logins an address (or a key's name)
	// may have in one Window before it is refused with 429
	// (0: DefaultLoginMaxFailures).
	MaxFailures int
	// Window is how long a count lasts, from its first failure
	// (0: DefaultLoginWindow).
	Window time.Duration
}

// NewSessions returns the logins of keys, each lasting ttl (0:
// DefaultSessionTTL), with their state kept in this process. secret, when
// not empty, is mixed into every MAC.
func NewSessions(keys *Keyring, ttl time.Duration, secret string) *Sessions {
	return NewSessionsWith(keys, SessionOptions{TTL: ttl, Secret: secret})
}

// NewSessionsWith returns the logins of keys configured by o.
func NewSessionsWith(keys *Keyring, o SessionOptions) *Sessions {
	s := &Sessions{
		keys: keys, ttl: o.TTL, secret: o.Secret,
		space:       keyspace.Space{Prefix: o.Prefix},
		maxFailures: int64(o.MaxFailures), window: o.Window,
	}
	if s.ttl <= 0 {
		s.ttl = DefaultSessionTTL
	}
	if s.maxFailures <= 0 {
		s.maxFailures = DefaultLoginMaxFailures
	}
	if s.window <= 0 {
		s.window = DefaultLoginWindow
	}
	if o.Redis != nil {
		s.state = redisState{rdb: o.Redis}
	} else {
		s.state = newMemState()
	}
	return s
}

// Refusal reasons of logins and sessions (RefusalCounter, the log).
const (
	reasonRole              = "role"
	reasonRateLimitedAddr   = "rate_limited_address"
	reasonRateLimitedKey    = "rate_limited_key"
	reasonUnavailable       = "unavailable"
	reasonInvalid           = "invalid"
	reasonExpired           = "expired"
	reasonRevoked           = "revoked"
	loginUnavailableMessage = "the gateway cannot check logins now (its store is unavailable); nothing was checked, retry later"
)

// Errors of Login and Open. Rate limits and outages are *leasegate.Error
// values made per call (they carry a Retry-After): tell them apart by
// leasegate.ErrorOf(err).Code (CodeRateLimited, CodeUnavailable).
var (
	// ErrLoginUnknown: the pasted text is not a configured key (401).
	ErrLoginUnknown = &leasegate.Error{Code: leasegate.CodeUnauthorized, Op: "auth", Message: "not a configured API key"}
	// ErrLoginRole: a configured key whose role may not use the page (403).
	ErrLoginRole = &leasegate.Error{Code: leasegate.CodeForbidden, Op: "auth", Message: "this API key's role may not use the ops page"}
	// ErrSessionInvalid: a session cookie that is malformed, forged,
	// expired, of a changed key, or ended by logout.
	ErrSessionInvalid = &leasegate.Error{Code: leasegate.CodeUnauthorized, Op: "auth", Message: "not a valid ops page session"}
)

func (s *Sessions) unavailable(via string, err error) error {
	s.keys.refused(via, reasonUnavailable)
	s.keys.log.Warn("ops page login state unavailable", zap.String("via", via), zap.Error(err))
	return &leasegate.Error{Code: leasegate.CodeUnavailable, Op: "auth", Message: loginUnavailableMessage, RetryAfter: leasegate.DefaultRetryAfter}
}

func (s *Sessions) limited(reason string, left time.Duration) error {
	s.keys.refused(ViaLogin, reason)
	return &leasegate.Error{Code: leasegate.CodeRateLimited, Op: "auth",
		Message: "too many failed logins; try again later", RetryAfter: max(left, time.Second)}
}

// sessionMACContext separates these MACs from any other use of the secret.
const sessionMACContext = "leasegate ops session v1"

// sessionKeyContext separates the per-key session secret derived from the
// configured secret from any other use of that secret.
const sessionKeyContext = "leasegate ops session key v1"

// maxSessionCookie bounds what is decoded: names and tenants are short.
const maxSessionCookie = 512

// sessionSkew is how far an expiry may lie beyond now + the TTL (clocks
// of two gateways differ a little).
const sessionSkew = time.Minute

// keySecret is the MAC key of key's sessions.
func (s *Sessions) keySecret(key Key) []byte {
	if s.secret == "" {
		return key.Hash[:]
	}
	m := hmac.New(sha256.New, []byte(s.secret))
	m.Write([]byte(sessionKeyContext))
	m.Write([]byte{0})
	m.Write(key.Hash[:])
	return m.Sum(nil)
}

func sessionMAC(secret []byte, payload string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(sessionMACContext))
	m.Write([]byte{0})
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// seal returns the cookie value of a new session of key until exp. The
// payload ends with a random nonce, so two logins of one key in the same
// second are two sessions, and logging one out leaves the other.
func (s *Sessions) seal(key Key, exp time.Time) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	payload := base64.RawURLEncoding.EncodeToString(
		[]byte(key.Name + "|" + key.Tenant + "|" + strconv.FormatInt(exp.Unix(), 10) + "|" +
			base64.RawURLEncoding.EncodeToString(nonce[:])))
	return payload + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(s.keySecret(key), payload))
}

// Login checks a key pasted into the login form from client (the
// request's address, as the gateway's IP extractor reads it). A known key
// of the ops role gets the value of a new session cookie, valid until
// expires. Refusals: ErrLoginUnknown, ErrLoginRole, a CodeRateLimited
// error (the address or the key's name has had too many failures) or a
// CodeUnavailable one (the counters could not be read: nothing was
// checked).
func (s *Sessions) Login(ctx context.Context, presented, client string, now time.Time) (p leasegate.Principal, cookie string, expires time.Time, err error) {
	byAddr := s.space.LoginFailures("", keyspace.LoginByAddress, client)
	n, left, err := s.state.hit(ctx, byAddr, s.window, now)
	if err != nil {
		return leasegate.Principal{}, "", time.Time{}, s.unavailable(ViaLogin, err)
	}
	if n > s.maxFailures {
		return leasegate.Principal{}, "", time.Time{}, s.limited(reasonRateLimitedAddr, left)
	}
	key, ok := s.keys.CheckKey(presented)
	if !ok {
		s.keys.refused(ViaLogin, reasonUnknown)
		return leasegate.Principal{}, "", time.Time{}, ErrLoginUnknown
	}
	if key.Role != leasegate.RoleOps {
		n, left, err := s.state.hit(ctx, s.space.LoginFailures(key.Tenant, keyspace.LoginByKey, key.Name), s.window, now)
		if err != nil {
			return leasegate.Principal{}, "", time.Time{}, s.unavailable(ViaLogin, err)
		}
		if n > s.maxFailures {
			return key.Principal(), "", time.Time{}, s.limited(reasonRateLimitedKey, left)
		}
		s.keys.refused(ViaLogin, reasonRole)
		return key.Principal(), "", time.Time{}, ErrLoginRole
	}
	// A login that succeeds does not count against its address. If the
	// count cannot be taken back it stays higher: stricter, never looser.
	if err := s.state.undo(ctx, byAddr, now); err != nil {
		s.keys.log.Warn("ops page login: could not take back the address's count", zap.Error(err))
	}
	expires = now.Add(s.ttl)
	return key.Principal(), s.seal(key, expires), expires, nil
}

// Open returns the principal of a session cookie value that is well
// formed, signed by a key configured now with the same tenant and the ops
// role, not expired at now, and not ended by Logout. It fails with
// ErrSessionInvalid, or a CodeUnavailable error when it cannot learn
// whether the session was ended.
func (s *Sessions) Open(ctx context.Context, value string, now time.Time) (leasegate.Principal, error) {
	key, id, _, reason := s.verify(value, now)
	if reason != "" {
		s.keys.refused(ViaSession, reason)
		return leasegate.Principal{}, ErrSessionInvalid
	}
	gone, err := s.state.revoked(ctx, s.space.SessionRevoked(key.Tenant, id), now)
	if err != nil {
		return leasegate.Principal{}, s.unavailable(ViaSession, err)
	}
	if gone {
		s.keys.refused(ViaSession, reasonRevoked)
		return leasegate.Principal{}, ErrSessionInvalid
	}
	return key.Principal(), nil
}

// Logout ends the session of a cookie value on every gateway: its id is
// recorded until it would have expired (plus the clock skew allowed).
// A value that is no valid session needs nothing ended.
func (s *Sessions) Logout(ctx context.Context, value string, now time.Time) error {
	key, id, expires, reason := s.verify(value, now)
	if reason != "" {
		return nil
	}
	ttl := expires.Sub(now) + sessionSkew
	if err := s.state.revoke(ctx, s.space.SessionRevoked(key.Tenant, id), ttl, now); err != nil {
		return s.unavailable(ViaSession, err)
	}
	return nil
}

// verify checks a session value without asking the login state: it
// returns the session's key, its id (the first 128 bits of the SHA-256
// of its MAC, in hex) and expiry, or the reason it is refused.
func (s *Sessions) verify(value string, now time.Time) (key Key, id string, expires time.Time, reason string) {
	if len(value) > maxSessionCookie {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	// name|tenant|expiry|nonce; sessions issued before the nonce have no
	// fourth field and stay valid until they expire.
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 && len(parts) != 4 {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	key, known := s.keys.KeyByName(parts[0])
	secret := s.keySecret(key)
	if !known {
		// Spend the same work on an unknown name as on a known one.
		secret = make([]byte, sha256.Size)
	}
	if !hmac.Equal(mac, sessionMAC(secret, payload)) || !known {
		return Key{}, "", time.Time{}, reasonInvalid
	}
	expires = time.Unix(exp, 0)
	switch {
	case key.Tenant != parts[1], key.Role != leasegate.RoleOps:
		return Key{}, "", time.Time{}, reasonInvalid
	case !now.Before(expires), expires.After(now.Add(s.ttl + sessionSkew)):
		return Key{}, "", time.Time{}, reasonExpired
	}
	sum := sha256.Sum256(mac)
	return key, hex.EncodeToString(sum[:16]), expires, ""
}
