package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// KeyName returns the name of the API key that authenticated the request,
// or "" (open mode, or no authentication ran).
func KeyName(c echo.Context) string {
	p, _ := c.Get(api.PrincipalKey).(leasegate.Principal)
	return p.KeyName
}

// ErrNoKeys: a Keyring needs at least one key (no keys is open mode, which
// is the absence of an Authenticator, not an empty one).
var ErrNoKeys = errors.New("auth: no keys")

// Keyring holds the configured keys and authenticates requests. It is
// safe for concurrent use; Replace swaps the whole set at once, so a
// request sees either the old keys or the new ones.
type Keyring struct {
	keys  atomic.Pointer[[]Key]
	log   *zap.Logger
	count atomic.Pointer[RefusalCounter]
}

// Where an authentication was refused (RefusalCounter's via).
const (
	ViaBearer  = "bearer"  // an Authorization: Bearer header
	ViaLogin   = "login"   // the /ops/ page's login form
	ViaSession = "session" // the /ops/ page's session cookie
)

// RefusalCounter counts refused authentications by where (ViaBearer,
// ViaLogin, ViaSession) and a reason from a fixed set (docs/metrics.md):
// server passes the metrics' counter, so auth needs no Prometheus.
type RefusalCounter func(via, reason string)

// RefusalReasons are the reasons each via counts (docs/metrics.md): the
// fixed sets a refusal counter may be given, so that its series can be
// exported at 0 before the first refusal.
var RefusalReasons = map[string][]string{
	ViaBearer:  {reasonMissing, reasonMalformed, reasonLength, reasonUnknown},
	ViaLogin:   {reasonUnknown, reasonRole, reasonRateLimitedAddr, reasonRateLimitedKey, reasonUnavailable},
	ViaSession: {reasonInvalid, reasonExpired, reasonRevoked, reasonUnavailable},
}

// CountRefusals makes every refusal of k and of the Sessions built on it
// call f. Set it before serving.
func (k *Keyring) CountRefusals(f RefusalCounter) { k.count.Store(&f) }

func (k *Keyring) refused(via, reason string) {
	if f := k.count.Load(); f != nil && *f != nil {
		(*f)(via, reason)
	}
}

// New returns a Keyring for keys (validated by Load; checked for
// duplicates again here). log receives one debug line per refusal, never
// the presented key.
func New(keys []Key, log *zap.Logger) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	if err := checkUnique(keys); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	k := &Keyring{log: log}
	set := append([]Key(nil), keys...)
	k.keys.Store(&set)
	return k, nil
}

// Replace swaps in a new set of keys (key rotation without a restart).
// An empty or inconsistent set is refused and the old one stays.
func (k *Keyring) Replace(keys []Key) error {
	if len(keys) == 0 {
		return ErrNoKeys
	}
	if err := checkUnique(keys); err != nil {
		return err
	}
	set := append([]Key(nil), keys...)
	k.keys.Store(&set)
	return nil
}

// Len is the number of keys.
func (k *Keyring) Len() int { return len(*k.keys.Load()) }

// lookup finds the key whose hash is SHA-256(presented). It hashes first,
// so what is compared has a fixed length whatever was sent, then compares
// against every stored hash with subtle.ConstantTimeCompare and selects
// the match with subtle.ConstantTimeSelect, without an early exit: the time
// taken depends only on the number of keys, not on which key matched or
// how many leading bytes of a hash agreed. (Even a leak would only reveal
// bits of the hash of the caller's own guess, but we do not rely on that.)
func (k *Keyring) lookup(presented string) (Key, bool) {
	h := sha256.Sum256([]byte(presented))
	keys := *k.keys.Load()
	found := -1
	for i := range keys {
		eq := subtle.ConstantTimeCompare(h[:], keys[i].Hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Key{}, false
	}
	return keys[found], true
}

// refusal reasons, for the debug log only: the client sees one body.
const (
	reasonMissing   = "missing"
	reasonMalformed = "malformed"
	reasonLength    = "bad_length"
	reasonUnknown   = "unknown"
)

// bearer extracts the credential of an "Authorization: Bearer <key>"
// header. The scheme is case-insensitive (RFC 9110); exactly one header,
// one space, and a key of RFC 6750 characters within the length bounds.
func bearer(r *http.Request) (string, string) {
	vals := r.Header.Values(echo.HeaderAuthorization)
	if len(vals) == 0 {
		return "", reasonMissing
	}
	if len(vals) > 1 {
		return "", reasonMalformed
	}
	scheme, key, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", reasonMalformed
	}
	if len(key) < MinKeyLen || len(key) > MaxKeyLen {
		return "", reasonLength
	}
	if !keyChars.MatchString(key) {
		return "", reasonMalformed
	}
	return key, ""
}

// Unauthorized is the one 401 error every refusal gets, so a caller
// cannot tell a missing key from a wrong one, or learn anything about the
// configured keys. (The HTTP layer adds "WWW-Authenticate: Bearer".)
func Unauthorized() *leasegate.Error {
	return leasegate.NewError(leasegate.CodeUnauthorized, "a valid API key is required: Authorization: Bearer <key>")
}

// Middleware authenticates each request: on success it stores the key's
// leasegate.Principal under api.PrincipalKey and calls next;
// otherwise it returns Unauthorized().
func (k *Keyring) Middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			presented, reason := bearer(c.Request())
			if reason == "" {
				key, ok := k.lookup(presented)
				if ok {
					c.Set(api.PrincipalKey, key.Principal())
					return next(c)
				}
				reason = reasonUnknown
			}
			k.refused(ViaBearer, reason)
			k.log.Debug("request refused: not authenticated",
				zap.String("request_id", c.Response().Header().Get(echo.HeaderXRequestID)),
				zap.String("reason", reason),
				zap.String("remote_ip", c.RealIP()))
			return Unauthorized()
		}
	}
}

// Principal is who a request with this key acts as.
func (key Key) Principal() leasegate.Principal {
	return leasegate.Principal{Tenant: key.Tenant, Role: key.Role, KeyName: key.Name}
}

// CheckKey authenticates a key presented outside an Authorization header:
// the /ops/ page's login form. The key must have the shape a Bearer key
// must have (ValidKey) and is then compared as Middleware compares it, in
// constant time against every stored hash.
func (k *Keyring) CheckKey(presented string) (Key, bool) {
	if ValidKey(presented) != nil {
		return Key{}, false
	}
	return k.lookup(presented)
}

// KeyByName returns the configured key called name, from the set in force
// now: a key removed or replaced by a reload (SIGHUP) is gone at once.
// Names are not secrets (they are in logs and audit records).
func (k *Keyring) KeyByName(name string) (Key, bool) {
	for _, key := range *k.keys.Load() {
		if key.Name == name {
			return key, true
		}
	}
	return Key{}, false
}
