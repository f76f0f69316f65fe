package handlers

import (
	"regexp"
	"testing"
)

func TestSafeRequestIDAcceptsWhatTheOldPatternAccepted(t *testing.T) {
	t.Parallel()
	pattern := regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)
	ids := []string{"", "a", "abc-DEF_1.2:3", "has space", "x\ny", "é", "a/b", "{x}",
		"0123456789012345678901234567890123456789012345678901234567890123",
		"01234567890123456789012345678901234567890123456789012345678901234"}
	for _, id := range ids {
		if got, want := safeRequestID(id), pattern.MatchString(id); got != want {
			t.Errorf("safeRequestID(%q): got %v, want %v", id, got, want)
		}
	}
}

func TestNewRequestIDsAreDistinctAndSafe(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if len(id) != 24 || !safeRequestID(id) {
			t.Fatalf("got id %q, want 24 safe characters", id)
		}
		if seen[id] {
			t.Fatalf("got id %q twice", id)
		}
		seen[id] = true
	}
}
