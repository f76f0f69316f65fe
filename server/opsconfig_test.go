package server

import (
	"strings"
	"testing"
	"time"
)

func TestValidateBoundsTheOpsSessionTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ttl time.Duration
		ok  bool
	}{
		{0, true}, // a Config not made by DefaultConfig: the default
		{-time.Minute, false},
		{59 * time.Second, false},
		{time.Minute, true},
		{8 * time.Hour, true},
		{MaxOpsSessionTTL, true},
		{MaxOpsSessionTTL + time.Second, false},
	} {
		cfg := DefaultConfig()
		cfg.OpsSessionTTL = tc.ttl
		err := cfg.Validate()
		if tc.ok && err != nil {
			t.Errorf("ttl %v: got %v, want it accepted", tc.ttl, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "ops-session-ttl")) {
			t.Errorf("ttl %v: got %v, want an ops-session-ttl error", tc.ttl, err)
		}
	}
}
