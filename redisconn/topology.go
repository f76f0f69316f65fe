package redisconn

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate/internal/storehealth"
	"github.com/leasegate/leasegate/metrics"
)

// topologyReload is how often the slot map is read again while a master
// is known down (topology.run).
const topologyReload = 100 * time.Millisecond

// topology follows a Redis Cluster's slot map as go-redis loads it
// (docs/operations.md, "Redis is down").
//
// go-redis reloads its slot map when a node answers MOVED or READONLY,
// and when a command finds the map older than a minute. While a master
// is known down, storehealth answers its calls without a Redis call and
// the probe PINGs the dead address, so no command draws a MOVED: after
// a failover its slots would answer 503 until the dead master came back
// (or a minute later). So while a master is down the map is reloaded every
// topologyReload; the promoted replica serves within that of the cluster
// naming it.
//
// Every map go-redis reads (its CLUSTER SLOTS, seen by a hook on each
// node) is compared with the last: each range of slots that changed
// master is logged, counted (leasegate_redis_topology_changes_total),
// and the masters are given to storehealth (Health.SetMasters), so that a
// node's down state does not outlive its being a master.
type topology struct {
	cc     *redis.ClusterClient
	health *storehealth.Health
	m      *metrics.Metrics
	log    *zap.Logger
	stop   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	owners []slotOwner // by start; nil until the first map
}

// slotOwner is a range of slots and its master.
type slotOwner struct {
	start, end int
	master     string
	replicas   int // available replicas, as the cluster lists them
}

func newTopology(cc *redis.ClusterClient, h *storehealth.Health, m *metrics.Metrics, log *zap.Logger) *topology {
	t := &topology{cc: cc, health: h, m: m, log: log, stop: make(chan struct{}), done: make(chan struct{})}
	go t.run()
	return t
}

// run reloads the slot map every topologyReload while a master is down.
func (t *topology) run() {
	defer close(t.done)
	tick := time.NewTicker(topologyReload)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			if t.health.AnyDown() {
				t.cc.ReloadState(context.Background())
			}
		}
	}
}

func (t *topology) close() {
	close(t.stop)
	<-t.done
}

// hook is the redis.Hook of the node client node: it sees the slot maps
// go-redis reads through it.
func (t *topology) hook(node *redis.Client) redis.Hook {
	return slotsHook{t: t, origin: node.Options().Addr}
}

type slotsHook struct {
	t      *topology
	origin string
}

func (slotsHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (slotsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (k slotsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if c, ok := cmd.(*redis.ClusterSlotsCmd); ok && err == nil {
			k.t.observe(k.origin, c.Val())
		}
		return err
	}
}

// observe takes a slot map that origin answered.
func (t *topology) observe(origin string, slots []redis.ClusterSlot) {
	owners := make([]slotOwner, 0, len(slots))
	replicas := map[string]int{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		o := slotOwner{start: s.Start, end: s.End, master: nodeAddr(origin, s.Nodes[0].Addr), replicas: len(s.Nodes) - 1}
		owners = append(owners, o)
		replicas[o.master] = o.replicas
	}
	if len(owners) == 0 {
		return // a node that knows no slot (not joined yet): no map to follow
	}
	slices.SortFunc(owners, func(a, b slotOwner) int { return cmp.Compare(a.start, b.start) })
	masters := make([]string, 0, len(replicas))
	for m, n := range replicas {
		masters = append(masters, m)
		t.m.RedisReplicas.WithLabelValues(m).Set(float64(n))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	first := t.owners == nil
	moves := slotMoves(t.owners, owners)
	t.owners = owners
	if !first && len(moves) > 0 {
		t.m.RedisTopologyChanges.Inc()
		for _, mv := range moves {
			t.log.Warn("redis cluster slots changed master",
				zap.String("slots", mv.slots()), zap.Int("slot_count", mv.end-mv.start+1),
				zap.String("from", mv.from), zap.String("to", mv.to), zap.Int("to_replicas", replicas[mv.to]))
		}
	}
	t.health.SetMasters(masters)
}

// move is a range of slots whose master changed ("" where none served).
type move struct {
	start, end int
	from, to   string
}

func (m move) slots() string {
	if m.start == m.end {
		return fmt.Sprint(m.start)
	}
	return fmt.Sprintf("%d-%d", m.start, m.end)
}

// slotMoves lists the ranges of slots whose master differs between old
// and cur (each sorted by start, ranges not overlapping), adjacent ranges
// with the same change merged.
func slotMoves(old, cur []slotOwner) []move {
	owner := func(list []slotOwner, slot int) (string, int) {
		// The master of slot, and the last slot of the run it is in.
		i, _ := slices.BinarySearchFunc(list, slot, func(o slotOwner, s int) int { return cmp.Compare(o.end, s) })
		if i < len(list) && list[i].start <= slot {
			return list[i].master, list[i].end
		}
		if i < len(list) {
			return "", list[i].start - 1
		}
		return "", 16383
	}
	var moves []move
	for slot := int(0); slot <= 16383; {
		from, fend := owner(old, slot)
		to, tend := owner(cur, slot)
		end := min(fend, tend)
		if from != to {
			if n := len(moves); n > 0 && moves[n-1].end == slot-1 && moves[n-1].from == from && moves[n-1].to == to {
				moves[n-1].end = end
			} else {
				moves = append(moves, move{start: slot, end: end, from: from, to: to})
			}
		}
		slot = end + 1
	}
	return moves
}

// nodeAddr is the address go-redis gives a node that origin lists as
// addr: a loopback host is origin's host when origin is not on loopback,
// and port 0 (a TLS-only cluster) is origin's port. storehealth knows a
// node by that address (its client's Options().Addr).
//
// go-redis v9 computes it in its unexported newClusterState, after the
// CLUSTER SLOTS reply this file reads, and exports no mapping: a node
// client's NodeAddress() is the address as listed, which a TLS-only
// cluster lists as port 0 for every node (so it cannot name them), and
// ClusterOptions.ClusterSlots loses the origin the rewriting needs. So
// the rewriting is repeated here, and TestNodeAddrIsTheAddressGoRedisDials
// holds it to go-redis's rules.
func nodeAddr(origin, addr string) string {
	oh, op, err := net.SplitHostPort(origin)
	h, p, err2 := net.SplitHostPort(addr)
	if err != nil || err2 != nil {
		return addr
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		if oip := net.ParseIP(oh); !(oip != nil && oip.IsLoopback() || oip == nil && loopbackName(oh)) {
			h = oh
		}
	}
	if p == "0" {
		p = op
	}
	return net.JoinHostPort(h, p)
}

// loopbackName: go-redis takes these host names for loopback.
func loopbackName(host string) bool {
	host = strings.ToLower(host)
	return host == "localhost" || strings.HasSuffix(host, ".docker.internal")
}
