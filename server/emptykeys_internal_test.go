package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A key file that is configured but holds no key (truncated by a failed
// deploy, a secret mounted empty, every line commented out) must stop
// the start: running open would serve every route to anyone, an ops
// caller, on a loopback address a reverse proxy forwards to, or anywhere
// with --insecure-open left over from development.
func TestConfiguredKeysThatHoldNoKeyStopTheStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	comments := filepath.Join(dir, "comments")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(comments, []byte("# keys\n\n# old:client:t:...\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		file, list   string
		insecureOpen bool
	}{
		{name: "an empty key file on loopback", file: empty},
		{name: "a key file of comments only on loopback", file: comments},
		{name: "an empty key file with --insecure-open", file: empty, insecureOpen: true},
		{name: "an --api-keys list of only commas", list: " , ,"},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			cfg := testConfig(t)
			cfg.APIKeysFile, cfg.APIKeys, cfg.InsecureOpen = tc.file, tc.list, tc.insecureOpen
			s, err := New(cfg, nil)
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatalf("New: got nil error (the gateway started open), want a refusal")
			}
			if !strings.Contains(err.Error(), "no API keys") {
				t.Errorf("got %q, want it to say no API keys were found", err)
			}
		})
	}
}
