package redisconn

import (
	"context"
	"strings"
	"testing"

	"github.com/leasegate/leasegate/internal/redistest"
)

// The version check that chooses sharded wake-ups reads every master:
// none of the test cluster's (Redis 7) is below 7, all are below 99.
func TestMastersBelowReadsEveryMastersVersion(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	ctx := context.Background()
	if old, err := mastersBelow(ctx, rc, shardedMinMajor); err != nil || len(old) != 0 {
		t.Fatalf("below %d: got %v, %v; want none (the test cluster runs Redis 7)", shardedMinMajor, old, err)
	}
	old, err := mastersBelow(ctx, rc, 99)
	if err != nil || len(old) != 3 {
		t.Fatalf("below 99: got %v, %v; want all 3 masters", old, err)
	}
	for _, m := range old {
		if !strings.Contains(m, ":") || !strings.Contains(m, " (") || !strings.HasSuffix(m, ")") {
			t.Errorf("got %q, want the address and its version", m)
		}
	}
}
