package redistest

import (
	"context"
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
	c := &Cluster{}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, Start(t,
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(FreePort(t)),
			"--cluster-node-timeout", "3000",
		))
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

// Addrs are host:port of every node.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr())
	}
	return a
}

// waitOK polls CLUSTER INFO on every node until all say cluster_state:ok
// and know every slot, or fails the test at the deadline.
func (c *Cluster) waitOK(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	ctx := context.Background()
	var last string
	for _, n := range c.Nodes {
		rc := n.Client(t)
		for {
			info, err := rc.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_slots_ok:16384") {
				break
			}
			last = info
			if err != nil {
				last = err.Error()
			}
			if time.Now().After(deadline) {
				t.Fatalf("cluster not ok after %v; %s says:\n%s", d, n, last)
			}
			time.Sleep(50 * time.Millisecond)
		}
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
