package keyspace

import (
	"fmt"
	"os"
	"path/filepath"
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
	t.Parallel()
	for _, tenant := range []string{"", "acme", "{x}", "a;r=b"} {
		for _, name := range oddNames {
			r := Space{}.Resource(tenant, name)
			lock, waiters := r.Lock(), r.Waiters()
			tag := HashTag(tenant, name)
			inner := tag[1 : len(tag)-1]
			if strings.ContainsAny(inner, "{}") {
				t.Errorf("HashTag(%q, %q) = %q: got a brace inside the tag, want none", tenant, name, tag)
			}
			for _, k := range []string{lock, waiters} {
				if got := clusterTag(k); got != inner {
					t.Errorf("key %q of (%q, %q): got cluster hash tag %q, want %q", k, tenant, name, got, inner)
				}
			}
			if !strings.HasPrefix(lock, "lg:{") || !strings.HasSuffix(lock, "}:lock") || !strings.HasSuffix(waiters, "}:waiters") {
				t.Errorf("got keys %q, %q; want lg:{...}:lock and lg:{...}:waiters", lock, waiters)
			}
		}
	}
}

func TestHashTagsOfOddNamesAreAllDistinct(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
		esc := escape(w)
		if strings.ContainsAny(esc, "{}:;=\x00\n") {
			t.Fatalf("escape(%q) = %q: got a special byte left unescaped", w, esc)
		}
		if prev, dup := seen[esc]; dup {
			t.Fatalf("escape(%q) = escape(%q) = %q, want distinct", w, prev, esc)
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
	t.Parallel()
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

// unescape reverses escape (test only), to show nothing is lost.
func unescape(t *testing.T, s string) string {
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
		r := Space{}.Resource(tenant, name)
		lock, waiters := r.Lock(), r.Waiters()
		if clusterTag(lock) != inner || clusterTag(waiters) != inner {
			t.Fatalf("keys %q %q hash on %q/%q, want %q", lock, waiters, clusterTag(lock), clusterTag(waiters), inner)
		}
		parts := strings.Split(inner, ";")
		if len(parts) != 2 || !strings.HasPrefix(parts[0], "t=") || !strings.HasPrefix(parts[1], "r=") {
			t.Fatalf("tag %q is not t=…;r=…", inner)
		}
		if got := unescape(t, parts[0][2:]); got != tenant {
			t.Fatalf("tenant: got %q back, want %q", got, tenant)
		}
		if got := unescape(t, parts[1][2:]); got != name {
			t.Fatalf("name: got %q back, want %q", got, name)
		}
	})
}

// pinned are keys as running deployments have stored them: changing one
// strands their data. doc names the page that shows the key, verbatim.
var pinned = []struct {
	got, want, doc string
}{
	// The lock engine (docs/keys.md).
	{Space{}.Resource("", "daily-report").Lock(), "lg:{t=;r=daily-report}:lock", "keys.md"},
	{Space{}.Resource("", "a b").Lock(), "lg:{t=;r=a b}:lock", "keys.md"},
	{Space{}.Resource("", "ü").Lock(), "lg:{t=;r=ü}:lock", "keys.md"},
	{Space{}.Resource("", "{a}").Lock(), "lg:{t=;r=%7Ba%7D}:lock", "keys.md"},
	{Space{}.Resource("", "a:fence").Lock(), "lg:{t=;r=a%3Afence}:lock", "keys.md"},
	{Space{}.Resource("", "50%").Lock(), "lg:{t=;r=50%25}:lock", "keys.md"},
	{Space{}.Resource("", "x'; DROP TABLE distributed_locks; --").Lock(), "lg:{t=;r=x'%3B DROP TABLE distributed_locks%3B --}:lock", "keys.md"},
	{Space{}.Resource("acme", "a;r=b").Lock(), "lg:{t=acme;r=a%3Br%3Db}:lock", "keys.md"},
	{Space{}.Resource("", "daily-report").Waiters(), "lg:{t=;r=daily-report}:waiters", ""},
	{Space{Prefix: "lg:"}.Resource("acme", "job").Lock(), "lg:{t=acme;r=job}:lock", ""},
	{Space{Prefix: "servertest:"}.Resource("acme", "job").Waiters(), "servertest:{t=acme;r=job}:waiters", ""},
	{Space{}.Resource("acme", "a:b").Released(), "lg:{t=acme;r=a%3Ab}:released", ""},
	{Space{}.Semaphore("acme", "payments").Released(), "lg:{t=acme;r=sem%3Apayments}:sem:released", ""},

	// Abuse control (docs/abuse.md, with tenant T, user U and lock <lock>).
	{Space{}.User("T", "U").Counter("<lock>"), "lg:{t=T;r=user%3AU}:ul:<lock>", "abuse.md"},
	{Space{}.User("T", "U").Flag("<lock>"), "lg:{t=T;r=user%3AU}:flag:<lock>", "abuse.md"},
	{Space{}.User("T", "U").Flags(), "lg:{t=T;r=user%3AU}:flags", "abuse.md"},
	{Space{}.User("T", "U").Ban(), "lg:{t=T;r=user%3AU}:ban", "abuse.md"},
	{Space{}.FlagIndex("T", ""), "lg:{t=T;r=abuse%3Aindex}:flagged", "abuse.md"},
	{Space{}.FlagIndex("T", "<lock>"), "lg:{t=T;r=abuse%3Aindex%3A<lock>}:flagged", "abuse.md"},
	{Space{}.AttemptLog("T", "<lock>"), "lg:{t=T;r=abuse%3Aattempts%3A<lock>}:attempts", "abuse.md"},
	{Space{}.User("", "u-1").Counter("login"), "lg:{t=;r=user%3Au-1}:ul:login", ""},
	{Space{}.User("acme", "a:b}").Ban(), "lg:{t=acme;r=user%3Aa%3Ab%7D}:ban", ""},
	{Space{Prefix: "x:"}.FlagIndex("acme", "login"), "x:{t=acme;r=abuse%3Aindex%3Alogin}:flagged", ""},
	{Space{}.Outbox(), "lg:{t=;r=webhook%3Aoutbox}:events", "abuse.md"},
	{Space{}.DeadLetters(), "lg:{t=;r=webhook%3Aoutbox}:dead", "abuse.md"},

	// Elections (docs/keys.md, docs/elections.md).
	{Space{}.Elections().Resource("acme", "nightly-report").Lock(), "lg:elect:{t=acme;r=nightly-report}:lock", "keys.md"},
	{Space{}.Elections().LockIndex("acme"), "lg:elect:{t=acme;r=locks%3Aindex}:held", "keys.md"},
}

func TestKeysAreThoseOfRunningDeployments(t *testing.T) {
	t.Parallel()
	for _, p := range pinned {
		if p.got != p.want {
			t.Errorf("got key %q, want %q", p.got, p.want)
		}
	}
}

func TestTheDocsShowTheKeysTheCodeBuilds(t *testing.T) {
	t.Parallel()
	docs := map[string]string{}
	for _, p := range pinned {
		if p.doc == "" {
			continue
		}
		if _, ok := docs[p.doc]; !ok {
			b, err := os.ReadFile(filepath.Join("..", "docs", p.doc))
			if err != nil {
				t.Fatal(err)
			}
			docs[p.doc] = string(b)
		}
		if !strings.Contains(docs[p.doc], "`"+p.got+"`") {
			t.Errorf("docs/%s: got no `%s` in it, want the key shown as built", p.doc, p.got)
		}
	}
}

// No two keys of different roles, tenants, resources, users or locks are
// the same, even where a resource is named like one of abuse's names
// ("user:<id>", "abuse:index"), and the keys of one resource or one user
// share one Cluster slot.
func TestKeysOfEveryRoleAreDistinctAndGroupedBySlot(t *testing.T) {
	t.Parallel()
	names := append([]string{"user:u", "user:", "abuse:index", "abuse:index:login", "u"}, oddNames...)
	locks := []string{"login", "s", "ban", "flags", "lock", "fence", "a.b-c_d"}
	seen := map[string]string{}
	add := func(key, what string) {
		t.Helper()
		if prev, dup := seen[key]; dup {
			t.Fatalf("got key %q for both %s and %s, want distinct", key, prev, what)
		}
		seen[key] = what
	}
	sameSlot := func(keys ...string) {
		t.Helper()
		for _, k := range keys[1:] {
			if clusterTag(k) != clusterTag(keys[0]) {
				t.Errorf("got keys %q and %q in different slots, want one", keys[0], k)
			}
		}
	}
	for _, tenant := range []string{"", "acme", "user:u", "{x}"} {
		for _, name := range names {
			r := Space{}.Resource(tenant, name)
			add(r.Lock(), fmt.Sprintf("lock of (%q, %q)", tenant, name))
			add(r.Waiters(), fmt.Sprintf("waiters of (%q, %q)", tenant, name))
			sameSlot(r.Lock(), r.Waiters(), r.Released())

			u := Space{}.User(tenant, name)
			add(u.Flags(), fmt.Sprintf("flags of user (%q, %q)", tenant, name))
			add(u.Ban(), fmt.Sprintf("ban of user (%q, %q)", tenant, name))
			userKeys := []string{u.Flags(), u.Ban()}
			for _, lock := range locks {
				add(u.Counter(lock), fmt.Sprintf("counter %q of user (%q, %q)", lock, tenant, name))
				add(u.Flag(lock), fmt.Sprintf("flag %q of user (%q, %q)", lock, tenant, name))
				userKeys = append(userKeys, u.Counter(lock), u.Flag(lock))
			}
			sameSlot(userKeys...)
		}
		add(Space{}.FlagIndex(tenant, ""), fmt.Sprintf("flag index of %q", tenant))
		for _, lock := range locks {
			add(Space{}.FlagIndex(tenant, lock), fmt.Sprintf("flag index %q of %q", lock, tenant))
		}
	}
}
