package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/auth"
)

func runKeys(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	code = run(context.Background(), append([]string{"keys"}, args...), strings.NewReader(stdin), &out, &errw, func(string) string { return "" })
	return code, out.String(), errw.String()
}

func TestKeysHash(t *testing.T) {
	t.Parallel()
	t.Run("hashes the key read from stdin, without its newline", func(t *testing.T) {
		const key = "my-secret-key-0123456789"
		code, out, errs := runKeys(t, key+"\r\n", "hash")
		if code != 0 {
			t.Fatalf("got exit %d (%s), want 0", code, errs)
		}
		if want := "sha256: " + auth.HashKey(key) + "\n"; out != want {
			t.Errorf("got %q, want %q", out, want)
		}
		if strings.Contains(out, key) {
			t.Errorf("the output repeats the key read from stdin: %q", out)
		}
	})
	t.Run("generates a key whose printed hash and entry load as a working key", func(t *testing.T) {
		code, out, errs := runKeys(t, "", "hash", "--generate", "--name", "billing", "--role", "ops", "--tenant", "shop")
		if code != 0 {
			t.Fatalf("got exit %d (%s), want 0", code, errs)
		}
		fields := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(line, ":")
			fields[k] = strings.TrimSpace(v)
		}
		key := fields["key"]
		if err := auth.ValidKey(key); err != nil {
			t.Fatalf("generated key %q: %v", key, err)
		}
		if fields["sha256"] != auth.HashKey(key) {
			t.Errorf("got sha256 %q, want %q", fields["sha256"], auth.HashKey(key))
		}
		k, err := auth.ParseEntry(fields["entry"])
		if err != nil {
			t.Fatalf("entry %q: %v", fields["entry"], err)
		}
		if k.Name != "billing" || k.Role != "ops" || k.Tenant != "shop" || auth.HashKey(key) != fields["sha256"] {
			t.Errorf("got entry %+v, want billing/ops/shop", k)
		}
	})
	bad := []struct {
		name, stdin string
		args        []string
	}{
		{"an empty stdin", "", []string{"hash"}},
		{"a key too short to be accepted", "short\n", []string{"hash"}},
		{"a key too long to be accepted", strings.Repeat("k", auth.MaxKeyLen+1) + "\n", []string{"hash"}},
		{"a key given as an argument", "", []string{"hash", "my-secret-key-0123456789"}},
		{"an unknown role for the entry", "my-secret-key-0123456789\n", []string{"hash", "--name", "n", "--role", "root", "--tenant", "t"}},
		{"no subcommand", "", nil},
	}
	for _, tc := range bad {
		t.Run("refuses "+tc.name+" with exit 2", func(t *testing.T) {
			code, out, _ := runKeys(t, tc.stdin, tc.args...)
			if code != 2 {
				t.Errorf("got exit %d, want 2", code)
			}
			if strings.Contains(out, "sha256") {
				t.Errorf("printed a hash on failure: %q", out)
			}
		})
	}
}
