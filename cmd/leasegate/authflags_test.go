package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/leasegate/leasegate/auth"
	"github.com/leasegate/leasegate/server"
)

// serveOnce runs `leasegate serve` with a cancelled context: it starts
// (so every setting is checked and the address bound) and stops at once.
func serveOnce(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	m := miniredis.RunT(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errw bytes.Buffer
	all := append([]string{"serve", "--redis-url", "redis://" + m.Addr()}, args...)
	code := run(ctx, all, strings.NewReader(""), &out, &errw, func(k string) string { return env[k] })
	return code, out.String() + errw.String()
}

func TestServeAuthSettings(t *testing.T) {
	t.Parallel()
	entry := "svc:client:shop:" + auth.HashKey("cmd-test-key-0123456789")
	t.Run("no keys on a public address is refused, naming --insecure-open", func(t *testing.T) {
		code, out := serveOnce(t, nil, "--addr", "0.0.0.0:0")
		if code != 2 || !strings.Contains(out, "--insecure-open") {
			t.Errorf("got exit %d, output %q; want 2 naming --insecure-open", code, out)
		}
	})
	t.Run("LEASEGATE_INSECURE_OPEN=true allows it, with a warning", func(t *testing.T) {
		code, out := serveOnce(t, map[string]string{"LEASEGATE_INSECURE_OPEN": "true"}, "--addr", "0.0.0.0:0")
		if code != 0 || !strings.Contains(out, "gateway is OPEN") {
			t.Errorf("got exit %d, output %q; want 0 and the open-mode warning", code, out)
		}
	})
	t.Run("LEASEGATE_API_KEYS configures keys", func(t *testing.T) {
		code, out := serveOnce(t, map[string]string{"LEASEGATE_API_KEYS": entry}, "--addr", "0.0.0.0:0")
		if code != 0 || !strings.Contains(out, "API keys loaded") || strings.Contains(out, "OPEN") {
			t.Errorf("got exit %d, output %q; want 0 and keys loaded", code, out)
		}
	})
	t.Run("a plain key where its hash belongs stops the start", func(t *testing.T) {
		code, out := serveOnce(t, nil, "--api-keys", "svc:client:shop:cmd-test-key-0123456789")
		if code != 2 || !strings.Contains(out, "not the key itself") {
			t.Errorf("got exit %d, output %q; want 2 explaining the hash", code, out)
		}
	})
	t.Run("a bad --trusted-proxies entry stops the start", func(t *testing.T) {
		code, out := serveOnce(t, nil, "--trusted-proxies", "10.0.0.0/8,nonsense")
		if code != 2 || !strings.Contains(out, "nonsense") {
			t.Errorf("got exit %d, output %q; want 2 naming the entry", code, out)
		}
	})
	t.Run("a bad --metrics-auth stops the start", func(t *testing.T) {
		code, out := serveOnce(t, nil, "--metrics-auth", "everyone")
		if code != 2 || !strings.Contains(out, "metrics-auth") {
			t.Errorf("got exit %d, output %q; want 2", code, out)
		}
	})
}

func TestTrustedProxiesFlagReplacesTheEnvironment(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	env := map[string]string{"LEASEGATE_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.0.1"}
	if err := parseFlags(flagSetFor(&cfg), []string{"--trusted-proxies", "172.16.0.0/12"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.TrustedProxies, ","); got != "172.16.0.0/12" {
		t.Errorf("got %q, want the flag's list only", got)
	}
	cfg = server.DefaultConfig()
	if err := parseFlags(flagSetFor(&cfg), nil, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.TrustedProxies, ","); got != "10.0.0.0/8,192.168.0.1" {
		t.Errorf("from the environment: got %q, want 10.0.0.0/8,192.168.0.1", got)
	}
}

func flagSetFor(cfg *server.Config) *flag.FlagSet {
	level := "info"
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, cfg, &level)
	return fs
}
