// Package webhook delivers leasegate's events (flag, ban, unban, clear,
// force-release) from the Redis outbox stream (keyspace.Outbox) that
// packages abuse and redislock write (through internal/outbox) to the
// configured URLs, signed, at least once, with retries and capped
// exponential backoff.
//
// Every gateway of a fleet runs a Deliverer on the same Redis. Each URL
// has its own consumer group on the outbox, so a URL that is down delays
// only itself. Within a group every event is claimed by one gateway at a
// time (XREADGROUP for new events, XCLAIM with a minimum idle time for
// retries and for the events of a gateway that died mid-delivery), so in
// the normal case each event is POSTed once per URL, and across crashes
// at least once, always with the same id. After MaxAttempts tries an event
// is moved to the dead-letter stream (keyspace.DeadLetters), counted in
// leasegate_webhook_deliveries_total{result="dead"}, and listed by
// `leasegate abuse webhooks`. docs/abuse.md ("Webhooks") has the details.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/metrics"
)

// SignatureHeader carries the signature of a delivery:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>".
const SignatureHeader = "Leasegate-Signature"

// Defaults of Config.
const (
	DefaultMaxAttempts = 30
	DefaultBaseBackoff = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultTimeout     = 10 * time.Second
	DefaultPoll        = time.Second
)

// MinSecretLength is the shortest secret accepted.
const MinSecretLength = 16

// Config configures a Deliverer.
type Config struct {
	// URLs receive every event (each its own consumer group).
	URLs []string
	// Secret signs every delivery (at least MinSecretLength bytes).
	Secret string
	// Prefix is the key prefix (keyspace), as the abuse service's.
	Prefix string
	// Consumer names this gateway in the consumer groups; default
	// host-pid-random. Two live gateways must not share one.
	Consumer string
	// MaxAttempts: tries before an event is dead-lettered (default 30:
	// with the default backoff about two hours of retries).
	MaxAttempts int
	// BaseBackoff and MaxBackoff: the wait after the n-th failed try is
	// BaseBackoff × 2^(n-1), at most MaxBackoff.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// Timeout bounds one POST.
	Timeout time.Duration
	// ClaimAfter: how long an event claimed by another gateway must have
	// been idle before this one takes it over (that gateway died); at
	// least Timeout, default 2 × Timeout + Poll.
	ClaimAfter time.Duration
	// Poll is how long a read blocks waiting for new events, and so how
	// often retries are looked for.
	Poll time.Duration
	// Client makes the POSTs (default: a client with Timeout).
	Client *http.Client
	Log    *zap.Logger
	// Metrics counts deliveries and shows the outbox's depth (default: a
	// private registry).
	Metrics *metrics.Metrics
	// Now is the clock of the signature's t (default time.Now).
	Now func() time.Time
}

// Deliverer delivers the outbox. Start it with Start; Close stops it.
type Deliverer struct {
	rdb    redis.UniversalClient
	cfg    Config
	stream string
	dead   string
	log    *zap.Logger
	m      *metrics.Metrics

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// ErrConfig: the configuration cannot work.
var ErrConfig = errors.New("webhook: bad configuration")

// Group is the consumer group of url on the outbox.
func Group(url string) string {
	h := sha256.Sum256([]byte(url))
	return "webhook:" + hex.EncodeToString(h[:8])
}

// New checks cfg and returns a Deliverer on rdb (not started).
func New(rdb redis.UniversalClient, cfg Config) (*Deliverer, error) {
	if len(cfg.URLs) == 0 {
		return nil, fmt.Errorf("%w: no URL", ErrConfig)
	}
	if len(cfg.Secret) < MinSecretLength {
		return nil, fmt.Errorf("%w: the secret must be at least %d bytes", ErrConfig, MinSecretLength)
	}
	seen := map[string]bool{}
	for _, u := range cfg.URLs {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("%w: %q is not an http(s) URL", ErrConfig, u)
		}
		if seen[u] {
			return nil, fmt.Errorf("%w: %q given twice", ErrConfig, u)
		}
		seen[u] = true
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BaseBackoff <= 0 {
		cfg.BaseBackoff = DefaultBaseBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.ClaimAfter <= 0 {
		cfg.ClaimAfter = 2*cfg.Timeout + cfg.Poll
	}
	cfg.ClaimAfter = max(cfg.ClaimAfter, cfg.Timeout)
	if cfg.Consumer == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.Consumer = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.NewStandalone()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ks := keyspace.Space{Prefix: cfg.Prefix}
	return &Deliverer{rdb: rdb, cfg: cfg, stream: ks.Outbox(), dead: ks.DeadLetters(), log: cfg.Log, m: cfg.Metrics}, nil
}

// Start creates the consumer groups (a new URL starts with the events
// written from now on) and delivers in the background until Close.
func (d *Deliverer) Start(ctx context.Context) error {
	for _, u := range d.cfg.URLs {
		err := d.rdb.XGroupCreateMkStream(ctx, d.stream, Group(u), "$").Err()
		if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
			return fmt.Errorf("webhook: create the consumer group of %s: %w", u, err)
		}
	}
	ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, u := range d.cfg.URLs {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			d.loop(ctx, u)
		}()
	}
	return nil
}

// Close stops delivering and waits for the loops. An event being POSTed
// is cut short and stays pending: another gateway (or this one after a
// restart) delivers it again, with the same id.
func (d *Deliverer) Close() {
	if d.cancel != nil {
		d.cancel()
	}
	d.wg.Wait()
}

// backoff is the wait after the n-th failed try.
func (d *Deliverer) backoff(n int64) time.Duration {
	b := d.cfg.BaseBackoff
	for i := int64(1); i < n && b < d.cfg.MaxBackoff; i++ {
		b *= 2
	}
	return min(b, d.cfg.MaxBackoff)
}

func (d *Deliverer) loop(ctx context.Context, url string) {
	group := Group(url)
	for ctx.Err() == nil {
		d.retry(ctx, url, group)
		d.gauges(ctx)
		xs, err := d.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: d.cfg.Consumer, Streams: []string{d.stream, ">"},
			Count: 16, Block: d.cfg.Poll,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if strings.Contains(err.Error(), "NOGROUP") {
				// The outbox was deleted (FLUSHDB, or by hand): recreate.
				_ = d.rdb.XGroupCreateMkStream(ctx, d.stream, group, "$").Err()
			}
			if errors.Is(err, leasegate.ErrStoreDown) {
				// Redis is known down: the gateway logs the outage once,
				// not once a Poll here.
				d.log.Debug("reading the webhook outbox", zap.Error(err))
			} else {
				d.log.Warn("reading the webhook outbox", zap.Error(err))
			}
			d.pause(ctx)
			continue
		}
		for _, s := range xs {
			for _, msg := range s.Messages {
				d.deliver(ctx, url, group, msg, 1)
			}
		}
	}
}

// pause waits one Poll (or until ctx is done) after a Redis error.
func (d *Deliverer) pause(ctx context.Context) {
	t := time.NewTimer(d.cfg.Poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// retry takes over pending events whose backoff has passed: this
// gateway's own after backoff(n), another's after ClaimAfter at least (it
// may still be POSTing). XCLAIM with that minimum idle time is atomic, so
// of several gateways only one gets each event.
func (d *Deliverer) retry(ctx context.Context, url, group string) {
	ps, err := d.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: d.stream, Group: group, Start: "-", End: "+", Count: 64,
	}).Result()
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, redis.Nil) {
			d.log.Warn("reading pending webhook events", zap.Error(err))
		}
		return
	}
	for _, p := range ps {
		if ctx.Err() != nil {
			return
		}
		wait := d.backoff(p.RetryCount)
		if p.Consumer != d.cfg.Consumer {
			wait = max(wait, d.cfg.ClaimAfter)
		}
		if p.Idle < wait {
			// Not due. XCLAIM's MIN-IDLE below checks the same atomically
			// on Redis; the embedded miniredis ignores MIN-IDLE, so this
			// check is what keeps it from claiming early there.
			continue
		}
		msgs, err := d.rdb.XClaim(ctx, &redis.XClaimArgs{
			Stream: d.stream, Group: group, Consumer: d.cfg.Consumer,
			MinIdle: wait, Messages: []string{p.ID},
		}).Result()
		if err != nil || len(msgs) == 0 {
			continue // not due yet, or taken by another gateway
		}
		if len(msgs[0].Values) == 0 {
			// Trimmed from the stream before it was delivered: nothing to send.
			d.rdb.XAck(ctx, d.stream, group, p.ID)
			continue
		}
		d.deliver(ctx, url, group, msgs[0], p.RetryCount+1)
	}
}

// deliver POSTs one event (try number n); on success it is acknowledged,
// on failure it stays pending for retry, or is dead-lettered after
// MaxAttempts tries.
func (d *Deliverer) deliver(ctx context.Context, url, group string, msg redis.XMessage, n int64) {
	ev := EventOf(msg)
	body, err := json.Marshal(ev)
	if err != nil {
		d.log.Error("encoding a webhook event", zap.Error(err))
		return
	}
	err = d.post(ctx, url, ev, body)
	if ctx.Err() != nil {
		return // shutting down: stays pending, delivered again later
	}
	if err == nil {
		d.m.WebhookDeliveries.WithLabelValues("delivered").Inc()
		if err := d.rdb.XAck(ctx, d.stream, group, msg.ID).Err(); err != nil {
			d.log.Warn("acknowledging a delivered webhook event (it will be delivered again)", zap.String("id", ev.ID), zap.Error(err))
		}
		return
	}
	if n < int64(d.cfg.MaxAttempts) {
		d.m.WebhookDeliveries.WithLabelValues("failed").Inc()
		d.log.Info("webhook delivery failed; will retry", zap.String("url", url), zap.String("id", ev.ID),
			zap.Int64("try", n), zap.Duration("next_in", d.backoff(n)), zap.Error(err))
		return
	}
	d.m.WebhookDeliveries.WithLabelValues("dead").Inc()
	d.log.Warn("webhook event given up on", zap.String("url", url), zap.String("id", ev.ID),
		zap.Int64("tries", n), zap.Error(err))
	_, xerr := d.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: d.dead, MaxLen: 10_000, Approx: true, Values: []any{
			"id", ev.ID, "type", ev.Type, "tenant", ev.Tenant, "url", url, "tries", n,
			"error", err.Error(), "event", string(body), "outbox_id", msg.ID,
		}})
		p.XAck(ctx, d.stream, group, msg.ID)
		return nil
	})
	if xerr != nil {
		d.log.Error("dead-lettering a webhook event (it stays pending)", zap.String("id", ev.ID), zap.Error(xerr))
	}
}

// post sends one signed POST; a 2xx answer is success.
func (d *Deliverer) post(ctx context.Context, url string, ev Event, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "leasegate-webhook/1")
	req.Header.Set("Leasegate-Event-Id", ev.ID)
	req.Header.Set("Leasegate-Event-Type", ev.Type)
	req.Header.Set(SignatureHeader, Sign(d.cfg.Secret, d.cfg.Now(), body))
	res, err := d.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("webhook: %s answered %d", url, res.StatusCode)
	}
	return nil
}

// gauges refreshes the outbox metrics (best effort).
func (d *Deliverer) gauges(ctx context.Context) {
	var (
		xlen, dlen *redis.IntCmd
		groups     *redis.XInfoGroupsCmd
	)
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		xlen = p.XLen(ctx, d.stream)
		dlen = p.XLen(ctx, d.dead)
		groups = p.XInfoGroups(ctx, d.stream)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return
	}
	d.m.WebhookOutbox.Set(float64(xlen.Val()))
	d.m.WebhookDead.Set(float64(dlen.Val()))
	var pending int64
	for _, g := range groups.Val() {
		pending += g.Pending
	}
	d.m.WebhookPending.Set(float64(pending))
}

// Sign is the Leasegate-Signature value of body at time at:
// "t=<unix>,v1=<hex HMAC-SHA256(secret, "<unix>." + body)>".
func Sign(secret string, at time.Time, body []byte) string {
	t := strconv.FormatInt(at.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(signature(secret, t, body))
}

// signature is the v1 MAC of body sent at unix time t (decimal), which
// Sign writes and Verify recomputes.
func signature(secret, t string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t + "."))
	mac.Write(body)
	return mac.Sum(nil)
}

// ErrBadSignature: a delivery's signature does not verify.
var ErrBadSignature = errors.New("webhook: bad signature")

// Verify checks a Leasegate-Signature header against body: the HMAC must
// match (compared in constant time) and t be within tolerance of now
// (replay protection; 0 skips the check).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrBadSignature
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: timestamp outside the tolerance", ErrBadSignature)
		}
	}
	want := signature(secret, ts, body)
	for _, s := range sigs {
		got, err := hex.DecodeString(s)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrBadSignature
}
