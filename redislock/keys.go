package redislock

import (
	"strings"
)

// Key layout (see docs/keys.md):
//
//	<prefix>{<tag>}:lock    hash  owner, token, acquired_at, expires_at
//	<prefix>{<tag>}:fence   string the last fencing token handed out
//
// <tag> is the escaped tenant and resource: "t=<tenant>;r=<resource>" with
// every '%', '{', '}', ':', ';', '=' and control byte written as %XX. The
// escaping is injective, so two different (tenant, resource) pairs never
// share a key, and the tag can contain no '}', so no resource name can end
// the hash tag early and choose its own Redis Cluster slot.

// escapeKeyPart writes s with the bytes that carry meaning in a key escaped
// as %XX. It is injective because '%' itself is escaped.
func escapeKeyPart(s string) string {
	const hex = "0123456789ABCDEF"
	need := false
	for i := 0; i < len(s); i++ {
		if mustEscape(s[i]) {
			need = true
			break
		}
	}
	if !need {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(c) {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func mustEscape(c byte) bool {
	switch c {
	case '%', '{', '}', ':', ';', '=':
		return true
	}
	return c < 0x20 || c == 0x7F
}

// HashTag returns the Redis Cluster hash tag, braces included, under which
// every key of (tenant, name) lives. Other packages (abuse) use it so their
// keys follow the same rules.
func HashTag(tenant, name string) string {
	return "{t=" + escapeKeyPart(tenant) + ";r=" + escapeKeyPart(name) + "}"
}
