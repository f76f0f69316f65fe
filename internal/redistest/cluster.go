package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/launch"
)

// Cluster is a Redis Cluster, each node a Server owned by the test, its
// masters joined by launch.FormCluster: masters only (StartCluster), or
// three masters with a replica each (StartFailoverCluster).
type Cluster struct {
	// Nodes are the masters as created.
	Nodes []*Server
	// Replicas added by AddReplica, or Replicas[i] the replica of
	// Nodes[i] (StartFailoverCluster).
	Replicas []*Server

	bus  map[*Server]int // cluster bus port of each node
	args []string        // every node's extra redis-server arguments
}

// StartCluster starts n cluster-enabled redis-servers on free ports (data
// and bus port both chosen free), gives each an equal range of the slots,
// joins them, and waits until every node reports cluster_state:ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{bus: map[*Server]int{}, args: []string{"--cluster-node-timeout", "3000"}}
	c.form(t, n)
	return c
}

// StartFailoverCluster starts three masters with one replica each, made
// to fail over quickly: cluster-node-timeout nodeTimeout, and
// cluster-require-full-coverage no, so the other masters serve while
// one's slots have no master. Extra args (AOF, say) go to every node. It
// returns once the cluster is ok, every node knows all six, and every
// replica is linked and in sync.
func StartFailoverCluster(t testing.TB, nodeTimeout time.Duration, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{bus: map[*Server]int{}, args: append([]string{
		"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
		"--cluster-require-full-coverage", "no",
	}, args...)}
	c.form(t, 3)
	for _, m := range c.Nodes {
		c.AddReplica(t, m)
	}
	// A master votes only for a replica it knows: wait until the
	// replicas' gossip has reached every node.
	poll(t, time.Now().Add(20*time.Second), 10*time.Millisecond, func() error {
		for _, n := range append(append([]*Server(nil), c.Nodes...), c.Replicas...) {
			info, err := n.Client(t).ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, "cluster_known_nodes:6\r") {
				return fmt.Errorf("%s does not know all six nodes: %v\n%s", n, err, info)
			}
		}
		return nil
	})
	return c
}

// form starts n masters and joins them (launch.FormCluster).
func (c *Cluster) form(t testing.TB, n int) {
	t.Helper()
	nodes := make([]launch.ClusterNode, n)
	for i := range nodes {
		s := c.startNode(t)
		c.Nodes = append(c.Nodes, s)
		nodes[i] = launch.ClusterNode{Addr: s.Addr(), Bus: c.bus[s]}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := launch.FormCluster(ctx, nodes); err != nil {
		t.Fatalf("StartCluster: %v", err)
	}
	c.waitOK(t, 20*time.Second)
}

// WaitPromoted waits until replica says ROLE master (WaitMaster) and
// every node but the dead master says cluster_state:ok, and returns when
// replica was first seen a master.
func (c *Cluster) WaitPromoted(t testing.TB, replica *Server, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	at := replica.WaitMaster(t, within)
	for _, n := range append(append([]*Server(nil), c.Nodes...), c.Replicas...) {
		if n.running() {
			c.waitNodeOK(t, n, deadline, false)
		}
	}
	return at
}

// WaitMaster polls ROLE on s every 10 ms until it says master, and
// returns when it first did: Redis's own promotion time of a replica, to
// within the poll.
func (s *Server) WaitMaster(t testing.TB, within time.Duration) time.Time {
	t.Helper()
	rc := s.Client(t)
	var at time.Time
	poll(t, time.Now().Add(within), 10*time.Millisecond, func() error {
		role, err := rc.Do(context.Background(), "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return fmt.Errorf("%s not a master after %v: ROLE %v %v", s, within, role, err)
		}
		at = time.Now()
		return nil
	})
	return at
}

func (c *Cluster) startNode(t testing.TB) *Server {
	t.Helper()
	bus := FreePort(t)
	s := Start(t, append(append(launch.ClusterArgs(bus), "--repl-diskless-sync-delay", "0"), c.args...)...)
	c.bus[s] = bus
	return s
}

// AddReplica starts one more cluster node and makes it a replica of
// master (CLUSTER MEET, then CLUSTER REPLICATE), waiting until its link is
// up.
func (c *Cluster) AddReplica(t testing.TB, master *Server) *Server {
	t.Helper()
	ctx := context.Background()
	id, err := master.Client(t).Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatalf("%s: CLUSTER MYID: %v", master, err)
	}
	r := c.startNode(t)
	rc := r.Client(t)
	if err := rc.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", master.Port(), c.bus[master]).Err(); err != nil {
		t.Fatalf("%s: CLUSTER MEET %s: %v", r, master, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	poll(t, deadline, 50*time.Millisecond, func() error {
		// Fails with "Unknown node" until the handshake is done.
		if err := rc.Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s: %w", r, master, err)
		}
		return nil
	})
	r.WaitReplicaLinked(t, time.Until(deadline))
	c.Replicas = append(c.Replicas, r)
	return r
}

// Addrs are host:port of every node.
func (c *Cluster) Addrs() []string { return addrs(c.Nodes) }

// waitOK polls CLUSTER INFO on every node until all say cluster_state:ok
// and know every slot, or fails the test at the deadline.
func (c *Cluster) waitOK(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, n := range c.Nodes {
		c.waitNodeOK(t, n, deadline, true)
	}
}

// waitNodeOK polls n's CLUSTER INFO until it says cluster_state:ok (and,
// with full, that every slot is ok).
func (c *Cluster) waitNodeOK(t testing.TB, n *Server, deadline time.Time, full bool) {
	t.Helper()
	rc := n.Client(t)
	poll(t, deadline, 10*time.Millisecond, func() error {
		info, err := rc.ClusterInfo(context.Background()).Result()
		switch {
		case err != nil:
			return fmt.Errorf("cluster not ok; %s says:\n%v", n, err)
		case !strings.Contains(info, "cluster_state:ok") || full && !strings.Contains(info, "cluster_slots_ok:16384"):
			return fmt.Errorf("cluster not ok; %s says:\n%s", n, info)
		}
		return nil
	})
}

// Client returns a cluster client seeded with every node, closed at
// cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = rc.Close() })
	if err := rc.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("ping cluster: %v", err)
	}
	return rc
}

// MoveSlot moves slot, with its keys, from the master that serves it to
// master to, as `redis-cli --cluster reshard` does: SETSLOT IMPORTING and
// MIGRATING, MIGRATE of every key, then SETSLOT NODE on every master. The
// old owner pushes a sunsubscribe to the clients of the slot's shard
// channels (Redis 7). It returns the master the slot left.
func (c *Cluster) MoveSlot(t testing.TB, slot int, to *Server) *Server {
	t.Helper()
	ctx := context.Background()
	id := func(s *Server) string {
		v, err := s.Client(t).Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatalf("%s: CLUSTER MYID: %v", s, err)
		}
		return v
	}
	shards, err := c.Nodes[0].Client(t).ClusterShards(ctx).Result()
	if err != nil {
		t.Fatalf("%s: CLUSTER SHARDS: %v", c.Nodes[0], err)
	}
	var from *Server
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int(r.Start) > slot || slot > int(r.End) {
				continue
			}
			for _, nd := range sh.Nodes {
				for _, m := range c.Nodes {
					if nd.Role == "master" && int(nd.Port) == m.Port() {
						from = m
					}
				}
			}
		}
	}
	if from == nil {
		t.Fatalf("MoveSlot: no master serves slot %d", slot)
	}
	if from == to {
		t.Fatalf("MoveSlot: slot %d is already on %s", slot, to)
	}
	fromID, toID := id(from), id(to)
	fc, tc := from.Client(t), to.Client(t)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("MoveSlot %d %s -> %s: %s: %v", slot, from, to, what, err)
		}
	}
	must("IMPORTING", tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err())
	must("MIGRATING", fc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err())
	for {
		keys, err := fc.Do(ctx, "CLUSTER", "GETKEYSINSLOT", slot, 100).StringSlice()
		must("GETKEYSINSLOT", err)
		if len(keys) == 0 {
			break
		}
		args := []interface{}{"MIGRATE", "127.0.0.1", to.Port(), "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must("MIGRATE", fc.Do(ctx, args...).Err())
	}
	must("NODE on the new owner", tc.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err())
	must("NODE on the old owner", fc.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err())
	for _, n := range c.Nodes {
		if n != from && n != to {
			must("NODE on "+n.String(), n.Client(t).Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err())
		}
	}
	return from
}
