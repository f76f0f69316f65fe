package auth

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/api"
)

// Plain keys of the test keyring (the keyring itself holds only hashes).
const (
	keyClientA = "client-a-0123456789abcdef"
	keyClientB = "client-b-0123456789abcdef"
	keyOpsA    = "ops-a-0123456789abcdef"
)

func testKeys(t *testing.T) []Key {
	t.Helper()
	var keys []Key
	for _, e := range []string{
		"client-a:client:a:" + HashKey(keyClientA),
		"client-b:client:b:" + HashKey(keyClientB),
		"ops-a:ops:a:" + HashKey(keyOpsA),
	} {
		k, err := ParseEntry(e)
		if err != nil {
			t.Fatalf("ParseEntry(%q): %v", e, err)
		}
		keys = append(keys, k)
	}
	return keys
}

func TestKeyNameIsSetForAudit(t *testing.T) {
	t.Parallel()
	kr, err := New(testKeys(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	var gotName, gotTenant string
	var gotRole leasegate.Role
	e.GET("/who", func(c echo.Context) error {
		gotName = KeyName(c)
		p, _ := c.Get(api.PrincipalKey).(leasegate.Principal)
		gotTenant, gotRole = p.Tenant, p.Role
		return c.NoContent(http.StatusNoContent)
	}, kr.Middleware())
	req := httptest.NewRequest(http.MethodGet, "/who", nil)
	req.Header.Set("Authorization", "Bearer "+keyOpsA)
	e.ServeHTTP(httptest.NewRecorder(), req)
	if gotName != "ops-a" || gotTenant != "a" || gotRole != leasegate.RoleOps {
		t.Errorf("got name %q tenant %q role %q, want ops-a, a, ops", gotName, gotTenant, gotRole)
	}
}

func TestNewNeedsKeys(t *testing.T) {
	t.Parallel()
	if _, err := New(nil, nil); err == nil {
		t.Errorf("New(nil): got nil error, want ErrNoKeys")
	}
	keys := testKeys(t)
	if _, err := New(append(keys, keys[0]), nil); err == nil {
		t.Errorf("New with a duplicate: got nil error, want ErrDuplicate")
	}
}

// BenchmarkLookup shows that lookup's cost does not depend on which key
// (if any) matches.
func BenchmarkLookup(b *testing.B) {
	var keys []Key
	plain := make([]string, 100)
	for i := range plain {
		plain[i], _ = GenerateKey()
		k, _ := ParseEntry("k" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ":client:t:" + HashKey(plain[i]))
		keys = append(keys, k)
	}
	kr, err := New(keys, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, key string }{
		{"first", plain[0]}, {"last", plain[99]}, {"none", "lg_nobody-has-this-key-000000000000000000000"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				kr.lookup(bc.key)
			}
		})
	}
}
