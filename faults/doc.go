// Package faults is leasegate's fault-injection suite: many clients
// acquire, hold, renew and release leases through the real HTTP gateway
// while Redis is killed, restarted, stalled, cut off by a TCP proxy or
// failed over (gracefully, or by a kill -9 of a Sentinel primary or a
// Cluster master), and the gateway itself is killed. Every call is recorded,
// and three checkers read the lock histories: a porcupine model of a
// leased lock, a fencing checker over a simulated downstream store, and
// token monotonicity per resource. Elections, lock sets and semaphores
// run beside the locks, each with checkers of its own.
//
// The package holds tests only. The short run is part of go test ./...;
// the long run is
//
//	go test ./faults/ -run TestFaults -faults.duration=10m -timeout 0 -v
//
// docs/safety.md states the guarantees, their conditions and the figures.
package faults
