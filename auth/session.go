package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/leasegate/leasegate"
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
//	payload = base64url(key name "|" tenant "|" expiry in Unix seconds)
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
type Sessions struct {
	keys   *Keyring
	ttl    time.Duration
	secret string
}

// DefaultSessionTTL is how long a login lasts unless configured.
const DefaultSessionTTL = 8 * time.Hour

// NewSessions returns the logins of keys, each lasting ttl (0:
// DefaultSessionTTL). secret, when not empty, is mixed into every MAC.
func NewSessions(keys *Keyring, ttl time.Duration, secret string) *Sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &Sessions{keys: keys, ttl: ttl, secret: secret}
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

// seal returns the cookie value of a session of key until exp.
func (s *Sessions) seal(key Key, exp time.Time) string {
	payload := base64.RawURLEncoding.EncodeToString(
		[]byte(key.Name + "|" + key.Tenant + "|" + strconv.FormatInt(exp.Unix(), 10)))
	return payload + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(s.keySecret(key), payload))
}

// Login checks a key pasted into the login form. known is false for
// anything that is not a configured key; a known key of the ops role gets
// the value of a new session cookie, valid until expires.
func (s *Sessions) Login(presented string, now time.Time) (p leasegate.Principal, known bool, cookie string, expires time.Time) {
	key, ok := s.keys.CheckKey(presented)
	if !ok {
		return leasegate.Principal{}, false, "", time.Time{}
	}
	if key.Role != leasegate.RoleOps {
		return key.Principal(), true, "", time.Time{}
	}
	expires = now.Add(s.ttl)
	return key.Principal(), true, s.seal(key, expires), expires
}

// Open returns the principal of a session cookie value that is well
// formed, signed by a key configured now with the same tenant and the ops
// role, and not expired at now.
func (s *Sessions) Open(value string, now time.Time) (leasegate.Principal, bool) {
	if len(value) > maxSessionCookie {
		return leasegate.Principal{}, false
	}
	payload, sig, ok := strings.Cut(value, ".")
	if !ok {
		return leasegate.Principal{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return leasegate.Principal{}, false
	}
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return leasegate.Principal{}, false
	}
	parts := strings.Split(string(raw), "|")
	if len(parts) != 3 {
		return leasegate.Principal{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return leasegate.Principal{}, false
	}
	key, known := s.keys.KeyByName(parts[0])
	secret := s.keySecret(key)
	if !known {
		// Spend the same work on an unknown name as on a known one.
		secret = make([]byte, sha256.Size)
	}
	if !hmac.Equal(mac, sessionMAC(secret, payload)) || !known {
		return leasegate.Principal{}, false
	}
	expires := time.Unix(exp, 0)
	switch {
	case key.Tenant != parts[1], key.Role != leasegate.RoleOps:
		return leasegate.Principal{}, false
	case !now.Before(expires), expires.After(now.Add(s.ttl + sessionSkew)):
		return leasegate.Principal{}, false
	}
	return key.Principal(), true
}
