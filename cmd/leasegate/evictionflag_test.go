package main

import (
	"flag"
	"io"
	"testing"

	"github.com/leasegate/leasegate/server"
)

func TestAllowEvictionFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"it is off by default", nil, nil, false},
		{"--allow-eviction turns it on", []string{"--allow-eviction"}, nil, true},
		{"LEASEGATE_ALLOW_EVICTION=true turns it on", nil, map[string]string{"LEASEGATE_ALLOW_EVICTION": "true"}, true},
		{"the flag beats the environment", []string{"--allow-eviction=false"}, map[string]string{"LEASEGATE_ALLOW_EVICTION": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := server.DefaultConfig()
			level := "info"
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			serveFlags(fs, &cfg, &level)
			if err := parseFlags(fs, tc.args, func(k string) string { return tc.env[k] }, io.Discard); err != nil {
				t.Fatalf("parse: %v", err)
			}
			if cfg.Redis.AllowEviction != tc.want {
				t.Errorf("got AllowEviction %v, want %v", cfg.Redis.AllowEviction, tc.want)
			}
		})
	}
}
