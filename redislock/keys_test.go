package redislock

import (
	"fmt"
	"strings"
	"testing"
)

// clusterTag is what Redis Cluster hashes for key: the text between the
// first '{' and the first '}' after it, when that is not empty; else the
// whole key. (The rule from the Cluster spec, written out here so the test
// does not trust the code under test.)
func clusterTag(key string) string {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return key
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return key
	}
	return key[s+1 : s+1+e]
}

var oddNames = []string{
	"a", "{a}", "a:fence", "a:lock", "a b", "ü", "日本語", "x'; DROP TABLE distributed_locks; --",
	"}", "{", "{}", "}{", "a}b{c}", "{{a}}", "%7B", "%", "t=;r=", ";r=a", "a;r=b", "=", "\x7f",
	"{lg:}", "lg:{a}:lock",
}

func TestHashTagCoversTheWholeKeyNameAndCannotBeSteered(t *testing.T) {
	for _, tenant := range []string{"", "acme", "{x}", "a;r=b"} {
		for _, name := range oddNames {
			l := New(nil, Options{}).Tenant(tenant)
			lock, fence := l.Keys(name)
			tag := HashTag(tenant, name)
			inner := tag[1 : len(tag)-1]
			if strings.ContainsAny(inner, "{}") {
				t.Errorf("HashTag(%q, %q) = %q: got a brace inside the tag, want none", tenant, name, tag)
			}
			for _, k := range []string{lock, fence} {
				if got := clusterTag(k); got != inner {
					t.Errorf("key %q of (%q, %q): got cluster hash tag %q, want %q", k, tenant, name, got, inner)
				}
			}
			if !strings.HasPrefix(lock, "lg:{") || !strings.HasSuffix(lock, "}:lock") || !strings.HasSuffix(fence, "}:fence") {
				t.Errorf("got keys %q, %q; want lg:{...}:lock and lg:{...}:fence", lock, fence)
			}
		}
	}
}

func TestHashTagsOfOddNamesAreAllDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, name := range oddNames {
		tag := HashTag("", name)
		if prev, dup := seen[tag]; dup {
			t.Errorf("got the same tag %q for %q and %q, want distinct", tag, prev, name)
		}
		seen[tag] = name
	}
}

// Escaping is injective: every (tenant, name) pair over an alphabet of the
// escaped bytes, their escapes' letters and plain bytes, up to a length,
// gives a different tag, and no tag holds an unescaped special byte.
func TestHashTagEscapingIsInjective(t *testing.T) {
	alphabet := []string{"%", "{", "}", ":", ";", "=", "\x00", "\n", "a", "7", "B", "3"}
	var words []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		words = append(words, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 3)

	seen := make(map[string]string, len(words))
	for _, w := range words {
		esc := escapeKeyPart(w)
		if strings.ContainsAny(esc, "{}:;=\x00\n") {
			t.Fatalf("escapeKeyPart(%q) = %q: got a special byte left unescaped", w, esc)
		}
		if prev, dup := seen[esc]; dup {
			t.Fatalf("escapeKeyPart(%q) = escapeKeyPart(%q) = %q, want distinct", w, prev, esc)
		}
		seen[esc] = w
	}

	short := words[:1+len(alphabet)+len(alphabet)*len(alphabet)] // lengths 0..2
	tags := make(map[string][2]string, len(short)*len(short))
	for _, tenant := range short {
		for _, name := range short {
			tag := HashTag(tenant, name)
			if prev, dup := tags[tag]; dup {
				t.Fatalf("HashTag(%q, %q) = HashTag(%q, %q) = %q, want distinct", tenant, name, prev[0], prev[1], tag)
			}
			tags[tag] = [2]string{tenant, name}
		}
	}
}

func TestHashTagLeavesPlainNamesReadable(t *testing.T) {
	cases := map[[2]string]string{
		{"", "daily-report"}: "{t=;r=daily-report}",
		{"acme", "a b"}:      "{t=acme;r=a b}",
		{"", "{a}"}:          "{t=;r=%7Ba%7D}",
		{"", "a:fence"}:      "{t=;r=a%3Afence}",
		{"", "50%"}:          "{t=;r=50%25}",
		{"", "ü"}:            "{t=;r=ü}",
		{"a;r=b", "c"}:       "{t=a%3Br%3Db;r=c}",
	}
	for in, want := range cases {
		if got := HashTag(in[0], in[1]); got != want {
			t.Errorf("HashTag(%q, %q): got %q, want %q", in[0], in[1], got, want)
		}
	}
}

// unescapeKeyPart reverses escapeKeyPart (test only), to show nothing is
// lost.
func unescapeKeyPart(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			t.Fatalf("truncated escape in %q", s)
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err != nil {
			t.Fatalf("bad escape in %q: %v", s, err)
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String()
}

func FuzzHashTag(f *testing.F) {
	for _, s := range oddNames {
		f.Add("", s)
	}
	f.Add("a;r=b", "c")
	f.Add("%", "%25")
	f.Fuzz(func(t *testing.T, tenant, name string) {
		tag := HashTag(tenant, name)
		inner := tag[1 : len(tag)-1]
		if strings.ContainsAny(inner, "{}") {
			t.Fatalf("HashTag(%q, %q) = %q holds a brace", tenant, name, tag)
		}
		lock, fence := New(nil, Options{}).Tenant(tenant).Keys(name)
		if clusterTag(lock) != inner || clusterTag(fence) != inner {
			t.Fatalf("keys %q %q hash on %q/%q, want %q", lock, fence, clusterTag(lock), clusterTag(fence), inner)
		}
		parts := strings.Split(inner, ";")
		if len(parts) != 2 || !strings.HasPrefix(parts[0], "t=") || !strings.HasPrefix(parts[1], "r=") {
			t.Fatalf("tag %q is not t=…;r=…", inner)
		}
		if got := unescapeKeyPart(t, parts[0][2:]); got != tenant {
			t.Fatalf("tenant: got %q back, want %q", got, tenant)
		}
		if got := unescapeKeyPart(t, parts[1][2:]); got != name {
			t.Fatalf("name: got %q back, want %q", got, name)
		}
	})
}
