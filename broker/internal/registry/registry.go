// Package registry keeps a broker registered with every NameServer: it
// sends REGISTER_BROKER with the broker's topic table to all NameServers in
// parallel at start, every period, and right after a topic change, and
// UNREGISTER_BROKER at shutdown (RocketMQ's BrokerOuterAPI). A caller that
// must not answer before the NameServers know a change (topic creation)
// registers synchronously with RegisterAll; rounds never overlap, so a
// round that read the topic table later is never overtaken by an older one.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Broker identifies the registering broker.
type Broker struct {
	ClusterName  string
	BrokerName   string
	BrokerID     int64
	BrokerAddr   string // host:port clients dial
	HAServerAddr string
}

// Result is what the NameServers answered: for a slave, the address of its
// master and the master's HA address, when some NameServer knows them.
type Result struct {
	MasterAddr   string
	HAServerAddr string
}

// Options configures a Registry.
type Options struct {
	NameServers []string
	Broker      Broker
	// Topics returns the current topic table (called for each round).
	Topics func() protocol.TopicConfigSerializeWrapper
	// Period between registrations (30 s in RocketMQ, clamped to 10..60 s
	// there; Tide accepts shorter periods for tests).
	Period  time.Duration
	Timeout time.Duration // per NameServer call (6 s in RocketMQ)
	// Compressed sends the compressed body form (RocketMQ's compressedRegister).
	Compressed bool
	// OnResult, if set, gets the answer of every round (slaves learn their
	// master from it).
	OnResult func(Result)
	Client   *remoting.Client
	Logger   *slog.Logger
}

// Registry runs the registration loop. Start it once; Stop unregisters.
// Methods are safe for concurrent use.
type Registry struct {
	opts    Options
	bmu     sync.Mutex    // guards opts.Broker's BrokerID and HAServerAddr (SetRole)
	round   chan struct{} // one registration round at a time
	trigger chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// New returns a registry; it does nothing until Start.
func New(opts Options) *Registry {
	if opts.Period <= 0 {
		opts.Period = 30 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 6 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Registry{opts: opts, round: make(chan struct{}, 1), trigger: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start registers once (synchronously, returning the joined errors of the
// NameServers that failed -- a broker keeps running when some NameServers
// are down) and then runs the periodic loop in the background.
func (r *Registry) Start(ctx context.Context) error {
	err := r.RegisterAll(ctx)
	go r.loop()
	return err
}

// Trigger asks for a registration round now (after a topic change). It
// never blocks.
func (r *Registry) Trigger() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

func (r *Registry) loop() {
	defer close(r.done)
	t := time.NewTicker(r.opts.Period)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		case <-r.trigger:
		}
		ctx, cancel := context.WithTimeout(context.Background(), r.opts.Timeout)
		if err := r.RegisterAll(ctx); err != nil {
			r.opts.Logger.Warn("register broker", "err", err)
		}
		cancel()
	}
}

// RegisterAll registers with every NameServer in parallel and waits for
// all answers (each bounded by Options.Timeout, the whole by ctx). It waits
// for a round in progress to end first, then reads the topic table, so
// what it sends includes every change made before it was called.
func (r *Registry) RegisterAll(ctx context.Context) error {
	select {
	case r.round <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("registry: wait for the round in progress: %w", ctx.Err())
	}
	defer func() { <-r.round }()
	w := r.opts.Topics()
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: w, FilterServerList: []string{}}
	data, err := body.Encode(r.opts.Compressed)
	if err != nil {
		return fmt.Errorf("registry: encode body: %w", err)
	}
	b := r.broker()
	hdr := protocol.RegisterBrokerRequestHeader{
		BrokerName: b.BrokerName, BrokerAddr: b.BrokerAddr, ClusterName: b.ClusterName,
		HAServerAddr: b.HAServerAddr, BrokerID: b.BrokerID, Compressed: r.opts.Compressed, BodyCRC32: protocol.BodyCRC(data),
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		res  Result
	)
	for _, ns := range r.opts.NameServers {
		wg.Add(1)
		go func(ns string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
			defer cancel()
			resp, err := r.opts.Client.Invoke(cctx, ns, protocol.NewRequest(protocol.RegisterBroker, hdr.Encode(), data))
			if err == nil {
				err = resp.Err()
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("nameserver %s: %w", ns, err))
				return
			}
			var rh protocol.RegisterBrokerResponseHeader
			if rh.Decode(resp.ExtFields) == nil && rh.MasterAddr != "" {
				res = Result{MasterAddr: rh.MasterAddr, HAServerAddr: rh.HAServerAddr}
			}
		}(ns)
	}
	wg.Wait()
	if r.opts.OnResult != nil && len(errs) < len(r.opts.NameServers) {
		r.opts.OnResult(res)
	}
	return errors.Join(errs...)
}

// Stop ends the loop and unregisters from every NameServer (best effort,
// bounded by ctx).
func (r *Registry) Stop(ctx context.Context) error {
	r.once.Do(func() { close(r.stop) })
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	b := r.broker()
	hdr := protocol.UnregisterBrokerRequestHeader{BrokerName: b.BrokerName, BrokerAddr: b.BrokerAddr, ClusterName: b.ClusterName, BrokerID: b.BrokerID}
	var errs []error
	for _, ns := range r.opts.NameServers {
		cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		resp, err := r.opts.Client.Invoke(cctx, ns, protocol.NewRequest(protocol.UnregisterBroker, hdr.Encode(), nil))
		cancel()
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("unregister from %s: %w", ns, err))
		}
	}
	return errors.Join(errs...)
}

// SetRole changes the broker id and HA address sent from the next round
// on (a broker switched between master and slave in controller mode).
// The NameServers replace the entry of the same address under another
// id, so no unregistration is needed.
func (r *Registry) SetRole(id int64, haServerAddr string) {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	r.opts.Broker.BrokerID, r.opts.Broker.HAServerAddr = id, haServerAddr
}

func (r *Registry) broker() Broker {
	r.bmu.Lock()
	defer r.bmu.Unlock()
	return r.opts.Broker
}
