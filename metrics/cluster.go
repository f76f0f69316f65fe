package metrics

import "github.com/prometheus/client_golang/prometheus"

// newCluster makes the collectors of a Redis Cluster's slot map, as the
// gateway reads it (server/topology.go): labelled by master only, so
// their cardinality is the cluster's masters.
func (m *Metrics) newCluster() {
	m.RedisTopologyChanges = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "redis_topology_changes_total",
		Help: "Changes of the Redis Cluster slot map that gave slots to another master (a failover, a reshard), as the gateway read them."})
	m.RedisReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "redis_replicas",
		Help: "Replicas the Redis Cluster lists as available for each master of its slot map, by node (address); compare with --min-replicas."},
		[]string{"node"})
	m.reg.MustRegister(m.RedisTopologyChanges, m.RedisReplicas)
}

// RedisNodeGone forgets a Redis node that no longer serves (a master
// demoted or removed by a failover, a replica): its redis_up and
// redis_replicas series go.
func (m *Metrics) RedisNodeGone(node string) {
	m.RedisUp.DeleteLabelValues(node)
	m.RedisReplicas.DeleteLabelValues(node)
}
