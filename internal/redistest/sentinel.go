package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/launch"
)

// Sentinel is a primary, one replica and three Sentinels watching them,
// every process owned by the test.
type Sentinel struct {
	// MasterName is the name the Sentinels monitor.
	MasterName string
	// Primary and Replica are the data nodes as started; after Failover
	// their roles are swapped (ask MasterAddr).
	Primary, Replica *Server
	Sentinels        []*Server
}

// StartSentinel starts a primary, a replica of it, and three Sentinels
// (quorum 2) on free ports, and waits until every Sentinel knows the
// replica, so a failover can be forced at once.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	bin := Binary(t)
	s := &Sentinel{MasterName: "lgmaster"}
	s.Primary, s.Replica = StartReplicated(t)
	for i := 0; i < 3; i++ {
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s 2000\n"+
			"sentinel failover-timeout %[1]s 10000\n"+
			"sentinel parallel-syncs %[1]s 1\n", s.MasterName, s.Primary.Port())
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatalf("write %s: %v", conf, err)
		}
		sn := newServer(t, launch.RedisSpec{Bin: bin, Dir: dir, Lead: []string{conf, "--sentinel"}, ReadyLine: "+monitor master"})
		sn.startOnFreePort()
		t.Cleanup(sn.Stop)
		s.Sentinels = append(s.Sentinels, sn)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, sn := range s.Sentinels {
		sc := sn.sentinelClient(t)
		poll(t, deadline, 50*time.Millisecond, func() error {
			if !knowsGoodReplica(sc, s.MasterName) {
				return fmt.Errorf("%s does not know a healthy replica of %s after 20s", sn, s.MasterName)
			}
			return nil
		})
	}
	return s
}

// Addrs are host:port of the Sentinels.
func (s *Sentinel) Addrs() []string { return addrs(s.Sentinels) }

// MasterAddr is the master's host:port as the first Sentinel sees it.
func (s *Sentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	sc := s.Sentinels[0].sentinelClient(t)
	hp, err := sc.GetMasterAddrByName(context.Background(), s.MasterName).Result()
	if err != nil || len(hp) != 2 {
		t.Fatalf("get-master-addr-by-name %s: %v %v", s.MasterName, hp, err)
	}
	return net.JoinHostPort(hp[0], hp[1])
}

// Failover forces a failover (SENTINEL FAILOVER) and waits until every
// Sentinel names the former replica as master, it answers as a master, and
// the former master has become its replica with a live link. It returns
// the new master's address.
func (s *Sentinel) Failover(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	old := s.MasterAddr(t)
	if err := s.Sentinels[0].sentinelClient(t).Failover(ctx, s.MasterName).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER %s: %v", s.MasterName, err)
	}
	deadline := time.Now().Add(25 * time.Second)
	var now string
	for _, sn := range s.Sentinels {
		sc := sn.sentinelClient(t)
		poll(t, deadline, 50*time.Millisecond, func() error {
			hp, err := sc.GetMasterAddrByName(ctx, s.MasterName).Result()
			if err != nil || len(hp) != 2 || net.JoinHostPort(hp[0], hp[1]) == old {
				return fmt.Errorf("%s still names %s as master 25s after SENTINEL FAILOVER (%v %v)", sn, old, hp, err)
			}
			now = net.JoinHostPort(hp[0], hp[1])
			return nil
		})
	}
	newMaster, oldMaster := s.Replica, s.Primary
	if newMaster.Addr() != now {
		newMaster, oldMaster = s.Primary, s.Replica
	}
	newMaster.WaitMaster(t, time.Until(deadline))
	oldMaster.WaitReplicaLinked(t, time.Until(deadline))
	return now
}

func (s *Server) sentinelClient(t testing.TB) *redis.SentinelClient {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { _ = sc.Close() })
	return sc
}

// knowsGoodReplica: the Sentinel lists a replica of name that is neither
// down nor disconnected and whose link to the master is up.
func knowsGoodReplica(sc *redis.SentinelClient, name string) bool {
	reps, err := sc.Replicas(context.Background(), name).Result()
	if err != nil {
		return false
	}
	for _, r := range reps {
		flags := r["flags"]
		if strings.Contains(flags, "s_down") || strings.Contains(flags, "disconnected") {
			continue
		}
		if r["master-link-status"] == "ok" {
			return true
		}
	}
	return false
}

// WaitReplicaLinked waits until r is a replica whose link to its master is
// up and in sync, or fails the test after d.
func (r *Server) WaitReplicaLinked(t testing.TB, d time.Duration) {
	t.Helper()
	rc := r.Client(t)
	poll(t, time.Now().Add(d), 50*time.Millisecond, func() error {
		info, err := rc.Info(context.Background(), "replication").Result()
		if err != nil || !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:up") ||
			strings.Contains(info, "master_sync_in_progress:1") {
			return fmt.Errorf("%s: replica link not up after %v: %v\n%s", r, d, err, info)
		}
		return nil
	})
}

// StartReplicated starts a primary and one replica of it, and returns
// once the replica acknowledges writes: a write on one connection of the
// primary was acknowledged by WAIT on that connection, as a grant with
// min-replicas is.
func StartReplicated(t testing.TB) (primary, replica *Server) {
	t.Helper()
	// No diskless-sync delay on either: the replica syncs at once, and
	// either node can be the primary after a Sentinel failover.
	primary = Start(t, "--repl-diskless-sync-delay", "0")
	replica = Start(t, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", fmt.Sprint(primary.Port()))
	replica.WaitReplicaLinked(t, 20*time.Second)
	conn := primary.Client(t).Conn()
	defer conn.Close()
	ctx := context.Background()
	poll(t, time.Now().Add(20*time.Second), 10*time.Millisecond, func() error {
		acks, err := int64(0), conn.Set(ctx, "redistest:replication-probe", "1", time.Minute).Err()
		if err == nil {
			acks, err = conn.Wait(ctx, 1, 100*time.Millisecond).Result()
		}
		if err != nil || acks != 1 {
			return fmt.Errorf("%s: replica not acknowledging after 20s: got %d acks (%v), want 1", replica, acks, err)
		}
		return nil
	})
	return primary, replica
}
