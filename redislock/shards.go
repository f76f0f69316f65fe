package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// Sharded release subscriptions (Redis Cluster >= 7; docs/waiting.md).
//
// With WaiterOptions.Shards, a key whose waiters (or watchers) name a
// shard channel (keyspace.Resource.Released) is woken by SSUBSCRIBE on
// that channel, at the master that serves its slot, for as long as this
// Waiter has a waiter or watcher on the key: the release script SPUBLISHes
// there (Config.ShardedReleases), and the message reaches that master
// and the gateways subscribed on it, not the whole cluster.
//
// go-redis routes a cluster PubSub by the slot of one of its channels
// when it connects, so one PubSub cannot follow channels of several
// masters. The Waiter keeps its own: one PubSub per master (opened on the
// master's node client, which always dials that address), holding the
// shard channels of every slot the master serves that it has waiters for.
// A manager goroutine routes each wanted channel to its master
// (MasterForKey) and sends SSUBSCRIBE and SUNSUBSCRIBE; one goroutine per
// master reads the messages.
//
// The rules of the single subscription hold per channel: a key's heads
// re-check when its channel's SSUBSCRIBE is confirmed (a release between
// their first try and the confirmation was not delivered), and poll every
// PollInterval while it is not confirmed. When a slot moves, its master
// pushes a sunsubscribe for the channel (Redis 7): the channel is routed
// again after the cluster map is reloaded. Any error on a master's
// subscription (a MOVED answer to SSUBSCRIBE, a lost connection, a dead
// node) drops that master's subscription; its channels are routed again,
// with backoff, and their heads re-check and poll meanwhile. A wake-up
// lost on the way only delays a waiter, never grants anything.

// ShardRouter finds the master that serves a key's slot and reloads the
// slot map; *redis.ClusterClient is one.
type ShardRouter interface {
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	ReloadState(ctx context.Context)
}

// shardChan is one shard channel this Waiter wants.
type shardChan struct {
	key       string   // the queue (release message) it wakes
	refs      int      // local queues and watchers on it
	sub       *nodeSub // where it is subscribed (or asked), nil while not
	confirmed bool     // its SSUBSCRIBE was confirmed on sub
}

// nodeSub is the shard subscription on one master.
type nodeSub struct {
	addr string
	ps   *redis.PubSub
	// chans are the channels subscribed (or asked) here. subs and
	// unsubs count this Waiter's SSUBSCRIBEs and SUNSUBSCRIBEs whose
	// answer has not come: a channel is confirmed by the answer to the
	// last SSUBSCRIBE sent, and a sunsubscribe the server pushes (slot
	// moved) is told apart from the answer to one of ours.
	chans        map[string]bool
	subs, unsubs map[string]int
	lost         bool // dropped; no more commands go to ps
}

// shardState is the Waiter's sharded subscriptions; guarded by Waiter.mu.
type shardState struct {
	chans map[string]*shardChan // by channel
	nodes map[string]*nodeSub   // by master address
	// reload: the slot map must be reloaded before channels are routed
	// again (a slot moved, or a subscription failed).
	reload bool
	// confirmed counts the channels in chans that are confirmed.
	confirmed int
	// warnedAt is when a failed shard subscription was last logged as a
	// warning.
	warnedAt time.Time
	kick     chan struct{} // buffered(1): the manager has work
	back     chan struct{} // buffered(1): Redis answers again (StoreBack)
	done     chan struct{} // closed when the manager and readers ended
	readers  sync.WaitGroup
}

func (w *Waiter) startShards() {
	w.shards = &shardState{
		chans: map[string]*shardChan{},
		nodes: map[string]*nodeSub{},
		kick:  make(chan struct{}, 1),
		back:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	go w.manageShards()
}

// wantShardLocked registers one more local waiter or watcher of key on
// channel; w.mu must be held.
func (w *Waiter) wantShardLocked(channel, key string) {
	s := w.shards
	sc := s.chans[channel]
	if sc == nil {
		sc = &shardChan{key: key}
		s.chans[channel] = sc
		signal(s.kick)
	}
	sc.refs++
}

// dropShardLocked is wantShardLocked undone; the last one out has the
// channel unsubscribed. w.mu must be held.
func (w *Waiter) dropShardLocked(channel string) {
	s := w.shards
	sc := s.chans[channel]
	if sc == nil {
		return
	}
	sc.refs--
	if sc.refs > 0 {
		return
	}
	delete(s.chans, channel)
	w.confirmLocked(sc, false)
	if sc.sub != nil {
		signal(s.kick)
	}
}

// confirmLocked marks sc confirmed or not and keeps the count (and
// WaiterOptions.OnShardChannels) up to date; w.mu must be held.
func (w *Waiter) confirmLocked(sc *shardChan, v bool) {
	if sc.confirmed == v {
		return
	}
	sc.confirmed = v
	if v {
		w.shards.confirmed++
	} else {
		w.shards.confirmed--
	}
	if w.opts.OnShardChannels != nil {
		w.opts.OnShardChannels(w.shards.confirmed)
	}
}

// shardListening reports whether releases on channel reach this Waiter
// (its SSUBSCRIBE is confirmed); w.mu must be held.
func (w *Waiter) shardListeningLocked(channel string) bool {
	sc := w.shards.chans[channel]
	return sc != nil && sc.confirmed
}

// manageShards routes wanted channels to their masters and unsubscribes
// unwanted ones until Close.
func (w *Waiter) manageShards() {
	s := w.shards
	defer func() {
		w.mu.Lock()
		nodes := s.nodes
		s.nodes = map[string]*nodeSub{}
		for _, ns := range nodes {
			ns.lost = true
		}
		w.mu.Unlock()
		for _, ns := range nodes {
			_ = ns.ps.Close()
		}
		s.readers.Wait()
		close(s.done)
	}()
	backoff := time.Duration(0)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-w.shutdown:
			return
		case <-s.kick:
		case <-retry.C:
		}
		w.mu.Lock()
		troubled := s.reload
		w.mu.Unlock()
		if troubled {
			// A subscription failed or a slot moved: let the cluster
			// settle (and the lazy slot-map reload finish) before
			// routing again, longer each time it goes on failing.
			backoff = min(max(2*backoff, 50*time.Millisecond), 2*time.Second)
			select {
			case <-w.shutdown:
				return
			case <-time.After(backoff):
			case <-s.back:
				backoff = 0
			}
		}
		if w.reconcileShards() {
			retry.Reset(0)
			continue
		}
		if !troubled {
			backoff = 0
		}
	}
}

// reconcileShards sends the SUNSUBSCRIBEs and SSUBSCRIBEs that bring the
// subscriptions in line with the wanted channels. failed reports that
// some channel could not be routed or subscribed (try again later).
func (w *Waiter) reconcileShards() (failed bool) {
	s := w.shards
	type cmd struct {
		ns *nodeSub
		ch string
	}
	var unsubs []cmd
	var route []string
	w.mu.Lock()
	reload := s.reload
	s.reload = false
	for _, ns := range s.nodes {
		for ch := range ns.chans {
			if sc := s.chans[ch]; sc == nil || sc.sub != ns {
				delete(ns.chans, ch)
				ns.unsubs[ch]++
				unsubs = append(unsubs, cmd{ns, ch})
			}
		}
	}
	for ch, sc := range s.chans {
		if sc.sub == nil {
			route = append(route, ch)
		}
	}
	w.mu.Unlock()

	ctx, cancel := context.WithTimeout(w.ctx, DefaultOpTimeout)
	defer cancel()
	for _, u := range unsubs {
		if err := u.ns.ps.SUnsubscribe(ctx, u.ch); err != nil {
			w.dropNode(u.ns, err)
		}
	}
	if len(route) == 0 {
		return false
	}
	if reload {
		w.opts.Shards.ReloadState(ctx)
	}
	for _, ch := range route {
		master, err := w.opts.Shards.MasterForKey(ctx, ch)
		if err != nil {
			w.log.Debug("shard subscription: cannot route the channel", zap.String("channel", ch), zap.Error(err))
			w.noteShardFailure()
			return true
		}
		ns := w.nodeFor(master)
		if ns == nil {
			return false // closed
		}
		w.mu.Lock()
		sc := s.chans[ch]
		if sc == nil || sc.sub != nil || ns.lost {
			w.mu.Unlock()
			failed = failed || (sc != nil && ns.lost)
			continue
		}
		sc.sub = ns
		ns.chans[ch] = true
		ns.subs[ch]++
		w.mu.Unlock()
		if err := ns.ps.SSubscribe(ctx, ch); err != nil {
			w.dropNode(ns, err)
			failed = true
		}
	}
	return failed
}

// noteShardFailure asks for a slot-map reload before the next routing.
func (w *Waiter) noteShardFailure() {
	w.mu.Lock()
	w.shards.reload = true
	w.mu.Unlock()
}

// nodeFor returns the subscription on master, opening it (and its
// reader) if there is none; nil after Close.
func (w *Waiter) nodeFor(master *redis.Client) *nodeSub {
	addr := master.Options().Addr
	s := w.shards
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	if ns := s.nodes[addr]; ns != nil {
		return ns
	}
	// No channel yet: the connection is dialled by the first SSUBSCRIBE
	// (or the reader's first receive), always to this master.
	ns := &nodeSub{addr: addr, ps: master.SSubscribe(w.ctx),
		chans: map[string]bool{}, subs: map[string]int{}, unsubs: map[string]int{}}
	s.nodes[addr] = ns
	s.readers.Add(1)
	go w.readNode(ns)
	return ns
}

// readNode reads one master's shard subscription until it fails or the
// Waiter closes.
func (w *Waiter) readNode(ns *nodeSub) {
	defer w.shards.readers.Done()
	pinged := false
	for {
		msg, err := ns.ps.ReceiveTimeout(w.ctx, w.opts.HealthInterval)
		if err != nil {
			if isTimeout(err) && !pinged {
				pinged = true
				if err := ns.ps.Ping(w.ctx); err == nil {
					continue
				}
			}
			w.dropNode(ns, err)
			return
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			w.shardSubscription(ns, m)
		case *redis.Message:
			w.received(true)
			w.notify(m.Payload)
		}
	}
}

// shardSubscription handles the confirmation of an SSUBSCRIBE, or a
// sunsubscribe: the answer to this Waiter's, or one the server pushed
// because the channel's slot left this master.
func (w *Waiter) shardSubscription(ns *nodeSub, m *redis.Subscription) {
	s := w.shards
	w.mu.Lock()
	sc := s.chans[m.Channel]
	switch m.Kind {
	case "ssubscribe":
		pending := countDown(ns.subs, m.Channel)
		if pending == 0 && sc != nil && sc.sub == ns && !sc.confirmed {
			w.confirmLocked(sc, true)
			w.wakeKeyLocked(sc.key)
		}
		w.mu.Unlock()
		return
	case "sunsubscribe":
	default:
		w.mu.Unlock()
		return
	}
	if ns.unsubs[m.Channel] > 0 {
		countDown(ns.unsubs, m.Channel)
		w.mu.Unlock()
		return
	}
	if sc == nil || sc.sub != ns {
		w.mu.Unlock()
		return
	}
	// The slot moved: route the channel again once the map is reloaded.
	// Until its new subscription is confirmed, its heads poll.
	sc.sub = nil
	w.confirmLocked(sc, false)
	delete(ns.chans, m.Channel)
	ns.unsubs[m.Channel]++
	s.reload = true
	w.wakeKeyLocked(sc.key)
	signal(s.kick)
	w.mu.Unlock()
	w.log.Info("shard channel left its master (slot moved); subscribing again where it went",
		zap.String("channel", m.Channel), zap.String("master", ns.addr))
	// Forget it in go-redis's PubSub too, or a reconnect would subscribe
	// it here again; the server answers with a sunsubscribe, counted above.
	ctx, cancel := context.WithTimeout(w.ctx, DefaultOpTimeout)
	defer cancel()
	if err := ns.ps.SUnsubscribe(ctx, m.Channel); err != nil {
		w.dropNode(ns, err)
	}
}

// dropNode gives up master ns's subscription after err: its channels are
// routed again (after a slot-map reload and a pause), and their heads
// re-check now and poll until they are subscribed again.
func (w *Waiter) dropNode(ns *nodeSub, err error) {
	s := w.shards
	w.mu.Lock()
	if ns.lost {
		w.mu.Unlock()
		return
	}
	ns.lost = true
	if s.nodes[ns.addr] == ns {
		delete(s.nodes, ns.addr)
	}
	had, live := len(ns.chans), 0
	for ch := range ns.chans {
		if sc := s.chans[ch]; sc != nil && sc.sub == ns {
			if sc.confirmed {
				live++
			}
			sc.sub = nil
			w.confirmLocked(sc, false)
			w.wakeKeyLocked(sc.key)
		}
	}
	closed := w.closed
	s.reload = true
	signal(s.kick)
	// A live subscription lost is a warning; failures to open one again
	// (a master down for a while) are one at most every stillDownEvery.
	now := time.Now()
	warn := live > 0 || (had > 0 && now.Sub(s.warnedAt) >= stillDownEvery)
	if warn {
		s.warnedAt = now
	}
	w.mu.Unlock()
	_ = ns.ps.Close()
	switch {
	case closed:
	case warn:
		w.log.Warn("shard subscription lost or not opened; its waiters poll until it is back",
			zap.String("master", ns.addr), zap.Int("channels", had), zap.Int("confirmed", live), zap.Error(err))
	default:
		w.log.Debug("shard subscription closed", zap.String("master", ns.addr), zap.Int("channels", had), zap.Error(err))
	}
}

// wakeKeyLocked wakes the head and the watchers of key; w.mu must be held.
func (w *Waiter) wakeKeyLocked(key string) {
	if q := w.queues[key]; q != nil {
		if f := q.l.Front(); f != nil {
			signal(f.Value.(*waiter).wake)
		}
	}
	w.wakeWatchersLocked(key)
}

// countDown takes one from m[k] (if above 0) and returns what is left.
func countDown(m map[string]int, k string) int {
	n := m[k]
	switch {
	case n > 1:
		m[k] = n - 1
		return n - 1
	case n == 1:
		delete(m, k)
	}
	return 0
}
