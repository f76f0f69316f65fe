package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters only, each a Server owned by the
// test, made with `redis-cli --cluster create`.
type Cluster struct {
	Nodes []*Server
	// Replicas added by AddReplica.
	Replicas []*Server

	bus map[*Server]int // cluster bus port of each node
}

// StartCluster starts n (at least 3) cluster-enabled redis-servers on free
// ports (data and bus port both chosen free), joins them with
// `redis-cli --cluster create --cluster-replicas 0 --cluster-yes`, and
// waits until every node reports cluster_state:ok.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("StartCluster: a Redis Cluster needs at least 3 masters, got %d", n)
	}
	cli := lookBinary(t, "redis-cli")
	c := &Cluster{bus: map[*Server]int{}}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, c.startNode(t))
	}
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	c.waitOK(t, 20*time.Second)
	return c
}

func (c *Cluster) startNode(t testing.TB) *Server {
	t.Helper()
	bus := FreePort(t)
	s := Start(t,
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(bus),
		"--cluster-node-timeout", "3000",
		"--repl-diskless-sync-delay", "0",
	)
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
		rc := n.Client(t)
		poll(t, deadline, 50*time.Millisecond, func() error {
			info, err := rc.ClusterInfo(context.Background()).Result()
			switch {
			case err != nil:
				return fmt.Errorf("cluster not ok after %v; %s says:\n%v", d, n, err)
			case !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384"):
				return fmt.Errorf("cluster not ok after %v; %s says:\n%s", d, n, info)
			}
			return nil
		})
	}
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
