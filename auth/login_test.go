package auth

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/leasegate/leasegate"
)

func TestCheckKeyAndKeyByName(t *testing.T) {
	t.Parallel()
	ring, err := New(testKeys(t), nil)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a configured key is its name, role, tenant and stored hash", func(t *testing.T) {
		p, ok := ring.CheckKey(keyOpsA)
		want := HashKey(keyOpsA)
		if !ok || p.Name != "ops-a" || p.Role != leasegate.RoleOps || p.Tenant != "a" {
			t.Fatalf("got %+v, %v; want ops-a, ops, tenant a", p, ok)
		}
		if got := hex.EncodeToString(p.Hash[:]); got != want {
			t.Errorf("got secret %s, want the stored hash %s", got, want)
		}
	})

	for _, bad := range []string{"", "short", "ops-a-0123456789abcdeX", "ops-a 0123456789abcdef", HashKey(keyOpsA)} {
		t.Run("CheckKey refuses "+quoteName(bad), func(t *testing.T) {
			if p, ok := ring.CheckKey(bad); ok {
				t.Errorf("got %+v, want no key", p)
			}
		})
	}

	t.Run("KeyByName finds a key by name only", func(t *testing.T) {
		p, ok := ring.KeyByName("client-b")
		if !ok || p.Role != leasegate.RoleClient || p.Tenant != "b" || hex.EncodeToString(p.Hash[:]) != HashKey(keyClientB) {
			t.Errorf("got %+v, %v; want client-b of tenant b", p, ok)
		}
		if _, ok := ring.KeyByName("nobody"); ok {
			t.Error("got a key for an unknown name")
		}
	})

	t.Run("the key handed out is a copy", func(t *testing.T) {
		p, _ := ring.KeyByName("ops-a")
		for i := range p.Hash {
			p.Hash[i] = 0
		}
		again, _ := ring.KeyByName("ops-a")
		if bytes.Equal(again.Hash[:], p.Hash[:]) {
			t.Error("got the keyring's hash changed through a returned Key")
		}
	})

	t.Run("both see a reload at once", func(t *testing.T) {
		keys := testKeys(t)
		if err := ring.Replace(keys[:2]); err != nil {
			t.Fatal(err)
		}
		if _, ok := ring.KeyByName("ops-a"); ok {
			t.Error("KeyByName: got the removed key")
		}
		if _, ok := ring.CheckKey(keyOpsA); ok {
			t.Error("CheckKey: got the removed key")
		}
	})
}

func quoteName(s string) string {
	if s == "" {
		return "an empty key"
	}
	if len(s) > 24 {
		return "the stored hash instead of the key"
	}
	return "key " + s
}
