package redisconn

import (
	"reflect"
	"testing"
)

func TestSlotMovesListsTheRangesThatChangedMaster(t *testing.T) {
	t.Parallel()
	three := []slotOwner{{0, 5460, "a", 1}, {5461, 10922, "b", 1}, {10923, 16383, "c", 1}}
	for _, tc := range []struct {
		name     string
		old, cur []slotOwner
		want     []move
	}{
		{"the same map moves nothing", three, three, nil},
		{"a failover moves the dead master's range", three,
			[]slotOwner{{0, 5460, "a2", 0}, {5461, 10922, "b", 1}, {10923, 16383, "c", 1}},
			[]move{{0, 5460, "a", "a2"}}},
		{"one slot resharded", three,
			[]slotOwner{{0, 5460, "a", 1}, {5461, 5461, "c", 1}, {5462, 10922, "b", 1}, {10923, 16383, "c", 1}},
			[]move{{5461, 5461, "b", "c"}}},
		{"an uncovered range", three,
			[]slotOwner{{5461, 10922, "b", 1}, {10923, 16383, "c", 1}},
			[]move{{0, 5460, "a", ""}}},
		{"adjacent ranges with the same change merge",
			[]slotOwner{{0, 99, "a", 0}, {100, 16383, "a", 0}},
			[]slotOwner{{0, 49, "b", 0}, {50, 16383, "b", 0}},
			[]move{{0, 16383, "a", "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := slotMoves(tc.old, tc.cur); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestNodeAddrIsTheAddressGoRedisDials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ origin, addr, want string }{
		{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7001"},
		{"10.0.0.5:7000", "127.0.0.1:7001", "10.0.0.5:7001"},
		{"10.0.0.5:7000", "10.0.0.6:7001", "10.0.0.6:7001"},
		{"localhost:7000", "127.0.0.1:7001", "127.0.0.1:7001"},
		{"10.0.0.5:6379", "10.0.0.6:0", "10.0.0.6:6379"},
	} {
		if got := nodeAddr(tc.origin, tc.addr); got != tc.want {
			t.Errorf("nodeAddr(%q, %q): got %q, want %q", tc.origin, tc.addr, got, tc.want)
		}
	}
}
