// Package auth authenticates leasegate's callers with API keys.
//
// A key is presented as "Authorization: Bearer <key>". The gateway stores
// only the SHA-256 of each key, with the key's name, role and tenant (see
// docs/auth.md for the file format). Keyring's middleware stores the
// caller's leasegate.Principal (tenant, role, key name) on the request, or
// answers 401 with one fixed body whatever went wrong. Sessions is the
// /ops/ page's browser login, keyed by the same keys.
package auth

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/leasegate/leasegate"
)

// Errors returned while loading keys. Check them with errors.Is.
var (
	// ErrBadEntry: a key entry is not name:role:tenant:sha256hex.
	ErrBadEntry = errors.New("auth: bad key entry")
	// ErrDuplicate: two entries share a name or a hash.
	ErrDuplicate = errors.New("auth: duplicate key")
	// ErrBadKey: a plain key does not have the shape the gateway accepts
	// (length or characters); such a key could never be presented.
	ErrBadKey = errors.New("auth: bad key")
)

// Key lengths the gateway accepts in a Bearer header. Anything shorter or
// longer is refused before it is hashed. Generated keys are 46 bytes.
const (
	MinKeyLen = 16
	MaxKeyLen = 256
)

// Key is one configured API key: who it is, what it may do, whose locks it
// sees, and the SHA-256 of the secret.
type Key struct {
	Name   string
	Role   leasegate.Role
	Tenant string
	Hash   [sha256.Size]byte
}

// Names and tenants are plain identifiers, so they are safe in logs,
// metrics and the key file's own syntax.
var identifier = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// keyChars is RFC 6750's b64token: the characters a Bearer credential may
// use, '=' only as trailing padding.
var keyChars = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)

// ValidKey reports (as ErrBadKey) whether key could be presented as a
// Bearer credential and accepted: MinKeyLen..MaxKeyLen bytes of RFC 6750
// token characters.
func ValidKey(key string) error {
	switch {
	case len(key) < MinKeyLen:
		return fmt.Errorf("%w: shorter than %d bytes", ErrBadKey, MinKeyLen)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrBadKey, MaxKeyLen)
	case !keyChars.MatchString(key):
		return fmt.Errorf("%w: only A-Z a-z 0-9 - . _ ~ + / and trailing = are allowed", ErrBadKey)
	}
	return nil
}

// HashKey is the hex SHA-256 of key, as stored in the key file.
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// GenerateKey returns a new random key: "lg_" and 32 random bytes in
// unpadded base64url (256 bits of entropy).
func GenerateKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: generate key: %w", err)
	}
	return "lg_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ParseEntry parses one entry "name:role:tenant:sha256hex".
func ParseEntry(s string) (Key, error) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 4 {
		return Key{}, fmt.Errorf("%w: want name:role:tenant:sha256hex, got %d fields", ErrBadEntry, len(parts))
	}
	name, role, tenant, hash := parts[0], leasegate.Role(parts[1]), parts[2], parts[3]
	var k Key
	switch {
	case !identifier.MatchString(name):
		return Key{}, fmt.Errorf("%w: name %q must be 1..64 of A-Z a-z 0-9 . _ -", ErrBadEntry, name)
	case !role.Valid():
		return Key{}, fmt.Errorf("%w: key %q: role %q must be client or ops", ErrBadEntry, name, role)
	case !identifier.MatchString(tenant):
		return Key{}, fmt.Errorf("%w: key %q: tenant %q must be 1..64 of A-Z a-z 0-9 . _ -", ErrBadEntry, name, tenant)
	case len(hash) != 2*sha256.Size:
		return Key{}, fmt.Errorf("%w: key %q: hash must be 64 hex digits (the SHA-256 of the key, see `leasegate keys hash`), not the key itself", ErrBadEntry, name)
	}
	if _, err := hex.Decode(k.Hash[:], []byte(hash)); err != nil {
		return Key{}, fmt.Errorf("%w: key %q: hash is not hex: %v", ErrBadEntry, name, err)
	}
	k.Name, k.Role, k.Tenant = name, role, tenant
	return k, nil
}

// ParseFile reads a key file: one entry per line, blank lines and lines
// starting with '#' ignored. source names the file in errors.
func ParseFile(r io.Reader, source string) ([]Key, error) {
	var keys []Key
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := ParseEntry(s)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, line, err)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("auth: read %s: %w", source, err)
	}
	return keys, nil
}

// ParseList reads comma-separated entries (the --api-keys form). Empty
// items are ignored.
func ParseList(s, source string) ([]Key, error) {
	var keys []Key
	for i, item := range strings.Split(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, err := ParseEntry(item)
		if err != nil {
			return nil, fmt.Errorf("%s entry %d: %w", source, i+1, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Load reads the keys of a key file (path, may be empty) and a
// comma-separated list (may be empty), and checks that no two keys share
// a name or a hash. No keys at all is not an error: it means open mode.
func Load(path, list string) ([]Key, error) {
	var keys []Key
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("auth: api keys file: %w", err)
		}
		defer f.Close()
		fk, err := ParseFile(f, path)
		if err != nil {
			return nil, err
		}
		keys = append(keys, fk...)
	}
	lk, err := ParseList(list, "--api-keys")
	if err != nil {
		return nil, err
	}
	keys = append(keys, lk...)
	if err := checkUnique(keys); err != nil {
		return nil, err
	}
	return keys, nil
}

func checkUnique(keys []Key) error {
	names := map[string]bool{}
	hashes := map[[sha256.Size]byte]string{}
	for _, k := range keys {
		if names[k.Name] {
			return fmt.Errorf("%w: name %q is used twice", ErrDuplicate, k.Name)
		}
		names[k.Name] = true
		if other, ok := hashes[k.Hash]; ok {
			return fmt.Errorf("%w: keys %q and %q have the same hash (one secret cannot have two roles or tenants)", ErrDuplicate, other, k.Name)
		}
		hashes[k.Hash] = k.Name
	}
	return nil
}
