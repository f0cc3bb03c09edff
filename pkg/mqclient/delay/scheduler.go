package delay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Message properties written by Schedule (user properties: they survive
// the retry topic and the DLQ).
const (
	PropKey = "tideDelayKey"
	PropAt  = "tideDelayAt" // Unix ms
)

// Sentinel errors; returned errors wrap them.
var (
	ErrInvalid       = errors.New("delay: invalid argument")
	ErrDelayTooLong  = errors.New("delay: delay beyond the maximum")
	ErrBadHandle     = errors.New("delay: malformed handle")
	ErrNotRecallable = errors.New("delay: handle cannot be recalled (delay level)")
	ErrEarly         = errors.New("delay: delivered before its time")
	ErrNoAction      = errors.New("delay: message carries no delayed action")
	// ErrNoTimers: a broker has no timer messages (Apache RocketMQ 4.x,
	// or Tide with tideExtensions=false) and no delay levels are
	// configured (WithDelayLevels); see Scheduler.Start.
	ErrNoTimers = errors.New("delay: broker without timer messages")
)

// Action is one delayed action: at At, Key's action runs on the
// consumers of Topic. Payload is optional (the key is the body if empty);
// Handler's Check and Act see only the key.
type Action struct {
	Topic   string
	Key     string
	At      time.Time
	Payload []byte
}

// RecallResult is the broker's answer to a recall.
type RecallResult int

const (
	// Recalled: the timer will never fire. Recall is idempotent: a
	// repeated recall of the same handle answers Recalled again, as long
	// as the broker remembers the outcome (it forgets it across a restart
	// and after many newer outcomes; then NotFound).
	Recalled RecallResult = iota
	// AlreadyFired: the timer was delivered before the recall.
	AlreadyFired
	// NotFound: the broker has no pending timer with this handle and
	// remembers no outcome for it: unknown handle, a timer whose time had
	// already passed when it was scheduled (delivered at once), or one
	// that fired or was recalled before a broker restart or too long ago
	// to be remembered. Nothing fires for it from now on either.
	NotFound
	// Requested: the broker does not answer Tide's recall request; a
	// RocketMQ 5 recall message (TIMER_DEL_UNIQKEY) was stored instead and
	// the outcome is unknown.
	Requested
)

func (r RecallResult) String() string {
	return [...]string{"recalled", "already-fired", "not-found", "requested"}[r]
}

// Option configures a Scheduler, Handler or Sweeper; each ignores the
// options that do not concern it.
type Option func(*config)

type config struct {
	log            *slog.Logger
	reg            prometheus.Registerer
	levels         []time.Duration
	maxDelay       time.Duration
	requestTimeout time.Duration
	onFire         func(Fired)
	interval       time.Duration
	batch          int
	grace          time.Duration
}

func newConfig(opts []Option) config {
	c := config{log: slog.Default(), maxDelay: 72 * time.Hour, requestTimeout: 3 * time.Second,
		interval: time.Minute, batch: 100}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// WithRegisterer registers metrics: tide_delay_fired_total{result} and
// tide_delay_lateness_seconds (Handler), tide_delay_swept_total (Sweeper).
func WithRegisterer(r prometheus.Registerer) Option { return func(c *config) { c.reg = r } }

// WithDelayLevels (Scheduler) switches to delay levels for brokers without
// timers; levels must equal the broker's messageDelayLevel, in order.
func WithDelayLevels(levels ...time.Duration) Option {
	return func(c *config) { c.levels = append([]time.Duration(nil), levels...) }
}

// WithMaxDelay (Scheduler) refuses timers further ahead (default 72 h).
func WithMaxDelay(d time.Duration) Option { return func(c *config) { c.maxDelay = d } }

// WithRequestTimeout (Scheduler) bounds one recall request (default 3 s).
func WithRequestTimeout(d time.Duration) Option { return func(c *config) { c.requestTimeout = d } }

// OnFire (Handler, Sweeper) is called after every firing with its outcome.
func OnFire(f func(Fired)) Option { return func(c *config) { c.onFire = f } }

// WithInterval (Sweeper) is the time between sweeps (default 1 min).
func WithInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithBatch (Sweeper) is the most keys one query returns (default 100).
func WithBatch(n int) Option { return func(c *config) { c.batch = n } }

// WithGrace (Sweeper) leaves rows overdue by less than d to their timers:
// the query gets now-d as its cut-off (default 0).
func WithGrace(d time.Duration) Option { return func(c *config) { c.grace = d } }

// Scheduler schedules and recalls delayed actions. It is safe for
// concurrent use. It uses, and does not own, a started Producer and Admin
// (the Admin finds brokers and sends recalls).
type Scheduler struct {
	p     *mqclient.Producer
	admin *mqclient.Admin
	cfg   config

	mu    sync.Mutex
	addrs map[string]string // broker name -> master address
}

// New returns a Scheduler sending with p and resolving brokers with admin.
func New(p *mqclient.Producer, admin *mqclient.Admin, opts ...Option) (*Scheduler, error) {
	if p == nil || admin == nil {
		return nil, fmt.Errorf("%w: producer and admin are required", ErrInvalid)
	}
	cfg := newConfig(opts)
	if cfg.maxDelay <= 0 || cfg.requestTimeout <= 0 {
		return nil, fmt.Errorf("%w: max delay and request timeout must be positive", ErrInvalid)
	}
	for i, l := range cfg.levels {
		if l <= 0 || (i > 0 && l < cfg.levels[i-1]) {
			return nil, fmt.Errorf("%w: delay levels must be positive and ascending", ErrInvalid)
		}
	}
	return &Scheduler{p: p, admin: admin, cfg: cfg, addrs: map[string]string{}}, nil
}

// Start checks that the brokers can serve the Scheduler: with timers (the
// default) every master the NameServers know must honour DeliverAt
// (Tide's timers or RocketMQ 5's timer wheel, mqclient.BrokerFeatures);
// otherwise it returns an error wrapping ErrNoTimers that names the
// broker and its version, because such a broker stores a timer message
// and delivers it at once (Handler would refuse it as early until its
// retries ran out). With WithDelayLevels it checks nothing: every
// RocketMQ broker has delay levels. Call it once after New; Schedule does
// not repeat the check (a broker added later with other features is not
// seen). It blocks for one runtime info request per master.
func (s *Scheduler) Start(ctx context.Context) error {
	if len(s.cfg.levels) > 0 {
		return nil
	}
	fs, err := s.admin.MasterFeatures(ctx)
	if err != nil {
		return fmt.Errorf("delay: check brokers: %w", err)
	}
	for _, f := range fs {
		if !f.Timers {
			return fmt.Errorf("%w: %s at %s (%s) stores timer messages as ordinary ones and delivers them at once; "+
				"use delay.WithDelayLevels with the broker's messageDelayLevel, or a broker with timers (Tide, RocketMQ 5)",
				ErrNoTimers, f.BrokerName, f.Addr, f.VersionDesc)
		}
	}
	return nil
}

// Close releases the Scheduler. It holds no connections of its own
// (recalls go through the Admin's), so it only exists for callers written
// when it did; safe to call twice.
func (s *Scheduler) Close() error { return nil }

// level returns the 1-based delay level for d: the shortest level >= d.
func level(levels []time.Duration, d time.Duration) (int, error) {
	if d <= 0 {
		return 0, nil
	}
	for i, l := range levels {
		if l >= d {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: %v exceeds the longest delay level %v", ErrDelayTooLong, d, levels[len(levels)-1])
}

// Schedule sends a's timer and returns its handle once the broker stored
// it. An error means the timer may or may not exist (a timed-out send can
// still be stored): keep the Sweeper as the backstop, or retry; a second
// firing is a no-op for Handler.
func (s *Scheduler) Schedule(ctx context.Context, a Action) (Handle, error) {
	if a.Topic == "" || a.Key == "" || a.At.IsZero() {
		return "", fmt.Errorf("%w: topic, key and time are required", ErrInvalid)
	}
	body := a.Payload
	if len(body) == 0 {
		body = []byte(a.Key)
	}
	msg := &mqclient.Message{Topic: a.Topic, Body: body, Keys: []string{a.Key},
		Properties: map[string]string{PropKey: a.Key, PropAt: strconv.FormatInt(a.At.UnixMilli(), 10)}}
	d := time.Until(a.At)
	timer := len(s.cfg.levels) == 0
	if timer {
		if d > s.cfg.maxDelay {
			return "", fmt.Errorf("%w: %v ahead, max %v", ErrDelayTooLong, d.Round(time.Second), s.cfg.maxDelay)
		}
		msg.DeliverAt = a.At
	} else {
		lvl, err := level(s.cfg.levels, d)
		if err != nil {
			return "", err
		}
		msg.DelayLevel = lvl
	}
	res, err := s.p.Send(ctx, msg)
	if err != nil {
		return "", fmt.Errorf("delay: schedule %s: %w", a.Key, err)
	}
	return Handle(handleParts{timer: timer, broker: res.Queue.BrokerName, topic: res.Queue.Topic,
		queue: int(res.Queue.QueueID), at: a.At, id: res.MsgID}.String()), nil
}

// Recall cancels the timer of h. See RecallResult; whatever the result,
// the caller's state change is what makes a later firing a no-op.
func (s *Scheduler) Recall(ctx context.Context, h Handle) (RecallResult, error) {
	p, err := parse(h)
	if err != nil {
		return NotFound, err
	}
	if !p.timer {
		return NotFound, ErrNotRecallable
	}
	addr, err := s.brokerAddr(ctx, p.broker)
	if err != nil {
		return NotFound, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.requestTimeout)
	defer cancel()
	res, err := s.admin.RecallTimer(rctx, addr, p.topic, p.id)
	switch {
	case errors.Is(err, mqclient.ErrNotSupported):
		q := mqclient.Queue{Topic: p.topic, BrokerName: p.broker, QueueID: int32(p.queue)}
		if err := s.p.Recall(ctx, &mqclient.SendResult{MsgID: p.id, Queue: q, DeliverAt: p.at}); err != nil {
			return NotFound, fmt.Errorf("delay: recall %s: %w", p.id, err)
		}
		return Requested, nil
	case err != nil:
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			s.forget(p.broker) // transport failure: the broker may have moved
		}
		return NotFound, fmt.Errorf("delay: recall %s: %w", p.id, err)
	}
	switch res {
	case mqclient.TimerRecalled:
		return Recalled, nil
	case mqclient.TimerAlreadyFired:
		return AlreadyFired, nil
	}
	return NotFound, nil
}

func (s *Scheduler) forget(broker string) {
	s.mu.Lock()
	delete(s.addrs, broker)
	s.mu.Unlock()
}

func (s *Scheduler) brokerAddr(ctx context.Context, broker string) (string, error) {
	s.mu.Lock()
	addr, ok := s.addrs[broker]
	s.mu.Unlock()
	if ok {
		return addr, nil
	}
	ci, err := s.admin.ClusterInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("delay: find broker %s: %w", broker, err)
	}
	bd, ok := ci.BrokerAddrTable[broker]
	if !ok {
		return "", fmt.Errorf("delay: broker %s not known to the name servers: %w", broker, mqclient.ErrBrokerNotFound)
	}
	addr, ok = bd.BrokerAddrs[protocol.MasterID]
	if !ok {
		return "", fmt.Errorf("delay: broker %s has no master: %w", broker, mqclient.ErrBrokerNotFound)
	}
	s.mu.Lock()
	s.addrs[broker] = addr
	s.mu.Unlock()
	return addr, nil
}
