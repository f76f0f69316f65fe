package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasegate/leasegate"
)

func TestParseEntry(t *testing.T) {
	t.Parallel()
	hash := HashKey("a-key-of-enough-length")
	t.Run("a well-formed entry is read field by field", func(t *testing.T) {
		k, err := ParseEntry("billing-svc:client:billing:" + hash)
		if err != nil {
			t.Fatalf("ParseEntry: %v", err)
		}
		if k.Name != "billing-svc" || k.Role != leasegate.RoleClient || k.Tenant != "billing" {
			t.Errorf("got %+v, want name billing-svc, role client, tenant billing", k)
		}
		if HashKey("a-key-of-enough-length") != hash {
			t.Errorf("HashKey is not deterministic")
		}
	})
	bad := map[string]string{
		"too few fields":              "svc:client:" + hash,
		"too many fields":             "svc:client:t:x:" + hash,
		"an unknown role":             "svc:admin:t:" + hash,
		"an empty tenant":             "svc:client::" + hash,
		"a tenant with a brace":       "svc:client:{t}:" + hash,
		"a name with a space":         "my svc:client:t:" + hash,
		"the plain key not its hash":  "svc:client:t:a-key-of-enough-length",
		"a hash that is not hex":      "svc:client:t:" + strings.Repeat("z", 64),
		"a hash of the wrong length":  "svc:client:t:" + hash[:62],
		"an upper-case role":          "svc:OPS:t:" + hash,
		"a tenant longer than 64":     "svc:client:" + strings.Repeat("t", 65) + ":" + hash,
		"a name with a control byte":  "s\x01vc:client:t:" + hash,
		"an empty entry between ':'s": ":::",
	}
	for name, entry := range bad {
		t.Run("rejects "+name, func(t *testing.T) {
			_, err := ParseEntry(entry)
			if !errors.Is(err, ErrBadEntry) {
				t.Errorf("ParseEntry(%q): got %v, want ErrBadEntry", entry, err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	h1, h2, h3 := HashKey("first-key-0000000"), HashKey("second-key-000000"), HashKey("third-key-0000000")
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	content := "# leasegate API keys\n\nalice:client:shop:" + h1 + "\n  ops-bob:ops:shop:" + h2 + "  \n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("reads the file and the list together", func(t *testing.T) {
		keys, err := Load(file, " carol:client:blog:"+h3+" ,")
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		var names []string
		for _, k := range keys {
			names = append(names, k.Name+"/"+string(k.Role)+"/"+k.Tenant)
		}
		got, want := strings.Join(names, " "), "alice/client/shop ops-bob/ops/shop carol/client/blog"
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	})
	t.Run("no file and no list is no keys, not an error", func(t *testing.T) {
		keys, err := Load("", "")
		if err != nil || len(keys) != 0 {
			t.Errorf("got %d keys, %v; want 0, nil", len(keys), err)
		}
	})
	t.Run("a bad line names the file and line", func(t *testing.T) {
		bad := filepath.Join(dir, "bad")
		if err := os.WriteFile(bad, []byte("# ok\nalice:client:shop:"+h1+"\nbob:root:shop:"+h2+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(bad, "")
		if !errors.Is(err, ErrBadEntry) || !strings.Contains(err.Error(), bad+":3:") {
			t.Errorf("got %v, want ErrBadEntry naming %s:3", err, bad)
		}
	})
	t.Run("a missing file is an error", func(t *testing.T) {
		_, err := Load(filepath.Join(dir, "nope"), "")
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want os.ErrNotExist", err)
		}
	})
	t.Run("two keys with one name are refused", func(t *testing.T) {
		_, err := Load(file, "alice:ops:other:"+h3)
		if !errors.Is(err, ErrDuplicate) {
			t.Errorf("got %v, want ErrDuplicate", err)
		}
	})
	t.Run("one secret in two tenants is refused", func(t *testing.T) {
		_, err := Load(file, "mallory:client:other:"+h1)
		if !errors.Is(err, ErrDuplicate) {
			t.Errorf("got %v, want ErrDuplicate", err)
		}
	})
}

func TestValidKeyAndGenerate(t *testing.T) {
	t.Parallel()
	for i := 0; i < 20; i++ {
		k, err := GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidKey(k); err != nil {
			t.Fatalf("generated key %q is not valid: %v", k, err)
		}
		if len(k) != 46 || !strings.HasPrefix(k, "lg_") {
			t.Fatalf("got key %q (%d bytes), want lg_ and 43 characters", k, len(k))
		}
	}
	a, _ := GenerateKey()
	b, _ := GenerateKey()
	if a == b {
		t.Errorf("two generated keys are equal: %q", a)
	}
	for _, bad := range []string{"short", strings.Repeat("k", MaxKeyLen+1), "has space in the key", "key=with=inner=equals", "ключ-ключ-ключ-ключ"} {
		if err := ValidKey(bad); !errors.Is(err, ErrBadKey) {
			t.Errorf("ValidKey(%q): got %v, want ErrBadKey", bad, err)
		}
	}
	for _, good := range []string{strings.Repeat("k", MinKeyLen), strings.Repeat("k", MaxKeyLen), "abc.def_ghi~jkl+mno/pqr==", "lg_AAAAAAAAAAAAAAAAAAAA-_"} {
		if err := ValidKey(good); err != nil {
			t.Errorf("ValidKey(%q): got %v, want nil", good, err)
		}
	}
}
