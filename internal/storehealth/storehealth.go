// Package storehealth knows whether each Redis node behind the gateway is
// reachable, and answers for it while it is not (docs/operations.md,
// "Redis is down"): a circuit breaker shared by every request, one per
// node (per master on Redis Cluster).
//
// A node is up or down:
//
//   - Up: calls go through. The first failure that shows the node
//     unreachable (a refused, reset or closed connection, a timeout of the
//     node itself rather than of the caller's own deadline, a LOADING or
//     MASTERDOWN reply) takes it down.
//   - Down: every call is refused at once with an error wrapping ErrDown,
//     before go-redis takes a connection or dials. A probe, the only
//     traffic the node then gets, PINGs it every ProbeInterval through the
//     same client (so through the same Sentinel lookup, TLS and ACL); the
//     first PONG brings it up.
//
// There is no half-open state that lets callers through on trial: no
// caller's request is spent finding out whether the store is back, and
// the probe's PING, which changes nothing, is the only test. A PING that
// succeeds on a node that still refuses scripts (a replica after a
// failover answers READONLY) brings it up, and the next script's error
// reply is a 503 as any reply error is; it does not take the node down
// again, so the state does not flap on replies.
//
// A node's state lasts as long as its role. On Redis Cluster the gateway
// tells SetMasters which nodes are masters of some slot (the slot map go-redis
// routes by); a node that is not (a replica, a master demoted or removed
// by a failover) has no state: its failures take nothing down, it has no
// probe, and a down state it had is dropped, so that neither a dead master
// nor its probe outlives the failover that replaced it, and a promoted
// replica starts up. Until SetMasters is called every node serves (one node,
// Sentinel's master).
//
// How long a call waits for a node that has just gone away is not this
// package's: the go-redis client's dial, read and write timeouts are set
// to the grace (--outage-grace), so a call that meets a dead node waits at
// most that long, and the failure takes the node down.
package storehealth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
)

// ErrDown is wrapped by every error of a call refused because its node is
// known to be down. It wraps leasegate.ErrStoreDown, the domain's word
// for it, so the gateway answers such a call 503 without logging it.
var ErrDown = fmt.Errorf("storehealth: redis is down: %w", leasegate.ErrStoreDown)

// Defaults of Options.
const (
	DefaultProbeInterval = 25 * time.Millisecond
	DefaultProbeTimeout  = time.Second
)

// Options configure a Health.
type Options struct {
	// ProbeInterval is how often a down node is PINGed.
	ProbeInterval time.Duration
	// ProbeTimeout bounds one PING of the probe.
	ProbeTimeout time.Duration
	// OnChange, when set, is told of a node's first appearance (as up)
	// and of every change of its state after that. It runs on the
	// goroutine that saw the change, outside any lock, and must not block.
	OnChange func(Change)
	// Log receives one warning when a node goes down and one info record
	// when it comes back, never a line per refused call. Nil logs nothing.
	Log *zap.Logger
}

// Change is a node's new state.
type Change struct {
	Node string
	Up   bool
	// New: the node was just added, or serves again (Up is then true);
	// otherwise its state changed.
	New bool
	// Gone: the node is no longer a master (SetMasters): it has no state any more.
	Gone bool
	// DownFor is how long the node was down, when it comes back up.
	DownFor time.Duration
}

// Health holds the state of every node. It is safe for concurrent use.
type Health struct {
	opts Options
	log  *zap.Logger

	mu    sync.Mutex
	nodes map[string]*Node
	// serving is the set of nodes that are masters (SetMasters); nil: every node.
	serving map[string]bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New returns a Health with no nodes yet; Hook adds them.
func New(opts Options) *Health {
	if opts.ProbeInterval <= 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	return &Health{opts: opts, log: log, nodes: map[string]*Node{}, stop: make(chan struct{})}
}

// Node is one Redis node's state.
type Node struct {
	h    *Health
	name string
	// down is nil while the node is up, and the error refused calls get
	// while it is down (one value per outage: refusing allocates nothing).
	down atomic.Pointer[downError]
	// off: the node is not a master (SetMasters), and has no state.
	off atomic.Bool

	// pinging is set while the probe's PING is in flight: dials are let
	// through then. go-redis dials in a goroutine of its pool, with a
	// context of its own, so the probe cannot be told by its context.
	pinging atomic.Bool

	mu      sync.Mutex
	client  *redis.Client // the probe's way to the node
	probing bool
}

type downError struct {
	msg   string
	since time.Time
	cause error
}

func newDownError(node string, cause error) *downError {
	now := time.Now()
	return &downError{since: now, cause: cause,
		msg: fmt.Sprintf("storehealth: redis is down (%s, since %s: %v)", node, now.UTC().Format(time.RFC3339Nano), cause)}
}

func (e *downError) Error() string { return e.msg }

func (e *downError) Unwrap() error { return ErrDown }

// Hook returns the go-redis hook that guards client, the client of the
// node called name (its address; "master" for a Sentinel-followed
// master), and that the probe PINGs through. Add it to that client
// (client.AddHook), on Redis Cluster to each node client as it is made
// (ClusterClient.OnNewNode). A client made again for the same name takes
// the earlier one's place.
func (h *Health) Hook(name string, client *redis.Client) redis.Hook {
	n, added := h.node(name)
	n.mu.Lock()
	n.client = client
	n.mu.Unlock()
	switch {
	case added && !n.off.Load():
		h.changed(Change{Node: name, Up: true, New: true})
	case n.down.Load() != nil:
		n.startProbe() // the earlier client's probe may have ended with it
	}
	return hook{n}
}

// node returns the node called name, adding it (up) when it is new.
func (h *Health) node(name string) (n *Node, added bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n = h.nodes[name]; n == nil {
		n = &Node{h: h, name: name}
		n.off.Store(h.serving != nil && !h.serving[name])
		h.nodes[name] = n
		added = true
	}
	return n, added
}

// SetMasters says which nodes are masters now: on Redis Cluster, those of
// the slot map. A node that stops being one drops its down state and its
// probe (Change.Gone); one that becomes one again starts up (Change.New).
func (h *Health) SetMasters(names []string) {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	var changes []Change
	h.mu.Lock()
	h.serving = set
	for name, n := range h.nodes {
		switch off := !set[name]; {
		case off && !n.off.Swap(true):
			if d := n.down.Swap(nil); d != nil {
				h.log.Info("redis node no longer serves any slot: its down state is dropped",
					zap.String("node", name), zap.Duration("down_for", time.Since(d.since)), zap.NamedError("cause", d.cause))
			}
			changes = append(changes, Change{Node: name, Gone: true})
		case !off && n.off.Swap(false):
			n.down.Store(nil)
			changes = append(changes, Change{Node: name, Up: true, New: true})
		}
	}
	h.mu.Unlock()
	for _, c := range changes {
		h.changed(c)
	}
}

// AnyDown says whether a node that serves is down.
func (h *Health) AnyDown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, n := range h.nodes {
		if n.down.Load() != nil {
			return true
		}
	}
	return false
}

// Close stops the probes and waits for them.
func (h *Health) Close() {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.stop)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

func (h *Health) changed(c Change) {
	if h.opts.OnChange != nil {
		h.opts.OnChange(c)
	}
}

// fail takes n down after err, a failure that shows it unreachable, and
// starts its probe. Only the first failure of an outage counts. After
// Close nothing is taken down: the gateway is stopping, and the calls
// its closing connections fail are no outage.
func (n *Node) fail(err error) {
	if n.off.Load() {
		return // not serving: nothing to take down
	}
	n.h.mu.Lock()
	closed := n.h.closed
	n.h.mu.Unlock()
	if closed {
		return
	}
	d := newDownError(n.name, err)
	if !n.down.CompareAndSwap(nil, d) {
		return
	}
	if n.off.Load() && n.down.CompareAndSwap(d, nil) {
		return // SetMasters took it off meanwhile
	}
	n.h.log.Warn("redis is down: calls that need it are answered 503 at once until it answers again",
		zap.String("node", n.name), zap.Error(err))
	n.h.changed(Change{Node: n.name})
	n.startProbe()
}

// recover brings n up after a successful PING.
func (n *Node) recover() {
	d := n.down.Swap(nil)
	if d == nil {
		return
	}
	downFor := time.Since(d.since)
	n.h.log.Info("redis is back: calls go through again",
		zap.String("node", n.name), zap.Duration("down_for", downFor), zap.NamedError("cause", d.cause))
	n.h.changed(Change{Node: n.name, Up: true, DownFor: downFor})
}

func (n *Node) startProbe() {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	if n.h.closed {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.probing {
		return
	}
	n.probing = true
	n.h.wg.Add(1)
	go n.probe()
}

// probe PINGs n every ProbeInterval until it answers, it is no longer
// down (it stopped serving), its client is closed, or Health closes.
func (n *Node) probe() {
	defer n.h.wg.Done()
	var closed *redis.Client
	defer func() {
		n.mu.Lock()
		n.probing = false
		again := n.client != closed // Hook gave it a new client
		n.mu.Unlock()
		// A failure between the last PING and probing = false would have
		// found the probe still running: look once more. A closed client
		// is not PINGed again: go-redis closes a node's client once the
		// node has left the slot map for a minute (Hook restarts the
		// probe with the next one).
		if n.down.Load() != nil && again {
			n.startProbe()
		}
	}()
	t := time.NewTicker(n.h.opts.ProbeInterval)
	defer t.Stop()
	for n.down.Load() != nil {
		n.mu.Lock()
		c := n.client
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), probeKey{}, n), n.h.opts.ProbeTimeout)
		n.pinging.Store(true)
		err := c.Ping(ctx).Err()
		n.pinging.Store(false)
		cancel()
		switch {
		case err == nil:
			n.recover()
			return
		case errors.Is(err, redis.ErrClosed):
			closed = c // the node is gone or the gateway stops
			return
		}
		select {
		case <-n.h.stop:
			return
		case <-t.C:
		}
	}
}

type probeKey struct{}

// isProbe: ctx is the probe's, which goes through while its node is down.
func isProbe(ctx context.Context) bool {
	return ctx.Value(probeKey{}) != nil
}

// hook is the redis.Hook of one node.
type hook struct{ n *Node }

// DialHook refuses a dial while the node is down (except while the
// probe's PING is in flight) and takes the node down when a dial fails.
// Either way the caller gets a connection that fails its first write
// with the reason, never a dial error: go-redis counts failed dials, and
// after PoolSize of them fails every dial of the pool at once while it
// retries one dial a second in the background, so Redis would be found
// back up to a second late. The probe is the gateway's way of finding
// Redis back, every ProbeInterval, and go-redis's is not needed.
func (k hook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := k.n.down.Load()
		if d != nil && !k.n.pinging.Load() {
			return failedConn{d}, nil
		}
		c, err := next(ctx, network, addr)
		if err == nil {
			return c, nil
		}
		if d == nil && Unreachable(ctx, err) {
			k.n.fail(err)
		}
		return failedConn{err}, nil
	}
}

func (k hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d := k.n.down.Load(); d != nil && !isProbe(ctx) {
			cmd.SetErr(d)
			return d
		}
		err := next(ctx, cmd)
		if err != nil && !isProbe(ctx) && Unreachable(ctx, err) {
			k.n.fail(err)
		}
		return err
	}
}

func (k hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		// The probe's pipelines are go-redis's own, opening its
		// connection (HELLO, CLIENT SETINFO).
		if d := k.n.down.Load(); d != nil && !isProbe(ctx) {
			for _, c := range cmds {
				c.SetErr(d)
			}
			return d
		}
		err := next(ctx, cmds)
		cause := err
		if cause == nil {
			// A reply error (LOADING) fails the commands, not the
			// pipeline.
			for _, c := range cmds {
				if c.Err() != nil {
					cause = c.Err()
					break
				}
			}
		}
		if cause != nil && !isProbe(ctx) && Unreachable(ctx, cause) {
			k.n.fail(cause)
		}
		return err
	}
}

// Unreachable says whether err, the failure of a call made with ctx,
// shows the node unreachable: the connection was refused, reset or closed
// under it, the node did not answer in time (and the caller's own
// deadline had not passed: a caller short of time learns nothing about
// the node), or it answered that it cannot serve (LOADING after a
// restart, MASTERDOWN). Other error replies are answers, not outages.
func Unreachable(ctx context.Context, err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || pastDeadline(ctx) {
		return false
	}
	if errors.Is(err, ErrDown) || errors.Is(err, context.Canceled) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return redis.HasErrorPrefix(err, "LOADING") || redis.HasErrorPrefix(err, "MASTERDOWN")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// pastDeadline says whether the caller's own time is up. ctx.Err() alone
// does not: go-redis sets the connection's deadline to the context's, and
// a read or write that meets it can fail before the context's timer has
// fired and set Err (under load, by milliseconds). Such a timeout is the
// caller's, and must not take the node down for every other caller.
func pastDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// failedConn is the connection a dial gets that could not, or must not,
// reach its node: every read and write fails with err, so the command
// that wanted it fails with it, and go-redis drops the connection. One
// that a caller gave up waiting for goes to the pool's idle list, where
// go-redis's health check (SyscallConn) finds it dead before anyone uses
// it.
type failedConn struct{ err error }

func (c failedConn) SyscallConn() (syscall.RawConn, error) { return nil, c.err }

func (c failedConn) Read([]byte) (int, error)         { return 0, c.err }
func (c failedConn) Write([]byte) (int, error)        { return 0, c.err }
func (c failedConn) Close() error                     { return nil }
func (c failedConn) LocalAddr() net.Addr              { return failedAddr{} }
func (c failedConn) RemoteAddr() net.Addr             { return failedAddr{} }
func (c failedConn) SetDeadline(time.Time) error      { return nil }
func (c failedConn) SetReadDeadline(time.Time) error  { return nil }
func (c failedConn) SetWriteDeadline(time.Time) error { return nil }

type failedAddr struct{}

func (failedAddr) Network() string { return "storehealth" }
func (failedAddr) String() string  { return "storehealth: no connection" }
