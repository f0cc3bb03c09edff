package mqclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Idempotent sends (WithIdempotence, on by default).
//
// The producer obtains a producer id and epoch from each broker master it
// sends to, lazily on its first send there (TideInitProducerID), and
// stamps every message with (producer id, epoch, sequence) in the
// TIDE_PSEQ property, the sequence counting the messages it sent to that
// queue (a batch takes one sequence per message). The broker stores a
// retried message only once and answers the retry with the first
// attempt's offsets.
//
// Retries: an attempt to the same queue keeps the message's sequence
// there, so a retry after a lost answer is recognised. A retry that goes
// to another queue takes a new sequence in that queue: if the first
// attempt was stored after all (its answer was lost), the message is then
// stored in both queues. To avoid that, once an attempt's outcome is
// unknown (timeout, connection closed after the request was written), the
// producer keeps retrying that queue, waiting 100 ms doubling up to 1 s
// between those attempts (pinnedWait); it moves to another broker's queue
// (and risks the duplicate) only when its broker cannot be reached at all
// (dial refused) and the topic has queues on another broker.
//
// A broker without the feature (Apache RocketMQ, or a Tide broker with
// tideExtensions=false) answers TideInitProducerID
// REQUEST_CODE_NOT_SUPPORTED; the producer then sends plain messages to
// it, as the official client does, and asks again after
// unsupportedRecheck (the broker may have been upgraded or failed over).

// unsupportedRecheck is how long a broker that does not hand out producer
// ids gets plain sends before the producer asks again.
const unsupportedRecheck = time.Minute

// idempotence is a producer's ids and sequences. Safe for concurrent use.
type idempotence struct {
	mu      sync.Mutex
	brokers map[string]*brokerPID // by broker name
	next    map[seqKey]int64      // next sequence per queue
	fenced  error                 // set once: every later send fails
}

type brokerPID struct {
	mu          sync.Mutex // serialises the init request
	id, epoch   int64
	unsupported time.Time // when the broker last answered not supported
}

type seqKey struct {
	broker, topic string
	queue         int32
	id, epoch     int64
}

// stamp is what one attempt carries.
type stamp struct {
	q  Queue
	st protocol.ProducerStamp
}

func newIdempotence() *idempotence {
	return &idempotence{brokers: map[string]*brokerPID{}, next: map[seqKey]int64{}}
}

// producerID returns the broker's producer id for this producer, asking
// it on first use; ok is false when the broker has no such feature.
func (p *Producer) producerID(ctx context.Context, brokerName, addr string) (id, epoch int64, ok bool, err error) {
	d := p.idem
	d.mu.Lock()
	if d.fenced != nil {
		d.mu.Unlock()
		return 0, 0, false, d.fenced
	}
	b := d.brokers[brokerName]
	if b == nil {
		b = &brokerPID{}
		d.brokers[brokerName] = b
	}
	d.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.id != 0 {
		return b.id, b.epoch, true, nil
	}
	if !b.unsupported.IsZero() && time.Since(b.unsupported) < unsupportedRecheck {
		return 0, 0, false, nil
	}
	req := protocol.NewRequest(protocol.TideInitProducerID,
		(&protocol.InitProducerIDRequestHeader{ProducerGroup: p.s.producerGroup, InstanceName: p.s.stableInstance}).Encode(), nil)
	resp, err := p.c.invoke(ctx, addr, req, p.s.requestTimeout)
	if errors.Is(err, ErrNotSupported) {
		b.unsupported = time.Now()
		p.s.logger.Info("mqclient: broker has no idempotent sends, sending plain messages", "broker", brokerName, "addr", addr)
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, fmt.Errorf("mqclient: producer id from %s: %w", addr, err)
	}
	if resp.Code != protocol.Success {
		return 0, 0, false, fmt.Errorf("mqclient: producer id from %s: %w", addr, resp.Err())
	}
	var h protocol.InitProducerIDResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, 0, false, fmt.Errorf("mqclient: producer id from %s: %w", addr, err)
	}
	b.id, b.epoch, b.unsupported = h.ProducerID, h.Epoch, time.Time{}
	return b.id, b.epoch, true, nil
}

// stampFor returns the stamp of an attempt of o to q (at addr): the one
// of o's previous attempt when that went to the same queue, else a new
// sequence in q. ok is false for a plain send.
func (p *Producer) stampFor(ctx context.Context, addr string, q Queue, o *outgoing) (ok bool, err error) {
	if p.idem == nil {
		return false, nil
	}
	id, epoch, ok, err := p.producerID(ctx, q.BrokerName, addr)
	if err != nil || !ok {
		o.stamp = nil
		return false, err
	}
	if s := o.stamp; s != nil && s.q == q && s.st.ProducerID == id && s.st.Epoch == epoch {
		return true, nil
	}
	k := seqKey{broker: q.BrokerName, topic: q.Topic, queue: q.QueueID, id: id, epoch: epoch}
	p.idem.mu.Lock()
	seq := p.idem.next[k]
	p.idem.next[k] = seq + int64(o.count())
	p.idem.mu.Unlock()
	o.stamp = &stamp{q: q, st: protocol.ProducerStamp{ProducerID: id, Epoch: epoch, Sequence: seq}}
	// a new stamp: wireBody encodes the batch body again (o.wireFor differs)
	return true, nil
}

// fence records a TIDE_PRODUCER_FENCED answer: the producer is done.
func (p *Producer) fence(err error) error {
	if p.idem == nil {
		return err
	}
	f := fmt.Errorf("%w: %w", ErrProducerFenced, err)
	p.idem.mu.Lock()
	if p.idem.fenced == nil {
		p.idem.fenced = f
	}
	p.idem.mu.Unlock()
	p.s.logger.Error("mqclient: producer fenced by a newer instance; it sends nothing any more", "group", p.s.producerGroup, "instance", p.s.stableInstance, "err", err)
	return f
}

// pinnedWait waits before retry attempt n of a pinned send: 100 ms,
// doubling up to 1 s (Kafka's retry.backoff.ms is 100 ms). A pinned send
// retries one broker, which just failed to answer: hammering it at once
// gains nothing, while a restart or a failover to its slave takes a few
// seconds. False when ctx ended first.
func pinnedWait(ctx context.Context, n int) bool {
	d := min(100*time.Millisecond<<min(n-1, 4), time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// otherBroker reports whether qs has a queue of a broker other than name:
// a pinned send leaves its broker only for another one (another queue of
// the same broker would gain nothing and risk a duplicate).
func otherBroker(qs []Queue, name string) bool {
	for _, q := range qs {
		if q.BrokerName != name {
			return true
		}
	}
	return false
}

// outcomeUnknown reports whether a failed attempt may have been stored:
// its request may have reached the broker and only the answer is missing.
func outcomeUnknown(err error) bool {
	if errors.Is(err, remoting.ErrDial) {
		return false
	}
	return errors.Is(err, remoting.ErrTimeout) || errors.Is(err, remoting.ErrClosed) ||
		errors.Is(err, context.DeadlineExceeded)
}

// count returns how many messages o holds.
func (o *outgoing) count() int {
	if o.batch {
		return len(o.items)
	}
	return 1
}

// wireProps returns o's properties for an attempt (with its stamp).
func (o *outgoing) wireProps() string {
	if o.stamp == nil {
		return encodeProps(o.props, o.msgID, nil)
	}
	return encodeProps(o.props, o.msgID, &o.stamp.st)
}

// wireBody returns o's body for an attempt: a batch's items each carry
// their own stamp, consecutive from the batch's sequence, after their
// other properties; without a stamp (a broker without the feature) the
// plain batch.
//
// A batch built from items (SendBatch with idempotence, auto-batches) is
// encoded into a pooled buffer (wirePool), once per stamp: attempts with
// the same stamp reuse it, a new stamp encodes it again in place. The
// buffer belongs to o until releaseWire, which p.send calls when it
// returns: no attempt can use it any more then, and the transport keeps
// no reference to a request's body once Invoke (or InvokeOneway)
// returned, having copied it into its frame (remoting.Conn.Invoke: "req
// is not modified or retained"). So a body returned here is valid only
// until o's send ends; nothing else may keep it.
func (o *outgoing) wireBody() ([]byte, error) {
	if !o.batch || o.items == nil {
		return o.body, nil
	}
	if o.wire != nil && o.wireFor == o.stamp {
		return *o.wire, nil
	}
	size := 0
	extra := 0
	if o.stamp != nil {
		extra = protocol.MaxStampPropertyLen
	}
	for i, it := range o.items {
		if o.stamp == nil && len(it.props) > protocol.MaxPropertiesLength {
			return nil, fmt.Errorf("%w: %w: batch item %d: properties of %d bytes exceed %d", ErrInvalidMessage, protocol.ErrMalformed, i, len(it.props), protocol.MaxPropertiesLength)
		}
		size += protocol.BatchItemLen(len(it.body), len(it.props)+extra)
	}
	if o.wire == nil {
		o.wire = getWireBuf()
	}
	dst := (*o.wire)[:0]
	if cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	if o.stamp == nil {
		for _, it := range o.items {
			dst = protocol.AppendBatchItem(dst, it.flag, it.body, it.props, nil)
		}
	} else {
		var sp [protocol.MaxStampPropertyLen]byte
		for i, it := range o.items {
			st := o.stamp.st
			st.Sequence += int64(i)
			dst = protocol.AppendBatchItem(dst, it.flag, it.body, it.props, protocol.AppendStampProperty(sp[:0], st))
		}
	}
	*o.wire, o.wireFor = dst, o.stamp
	return dst, nil
}

// maxPooledWire: batch body buffers that grew beyond this are dropped
// rather than pooled (SendBatch may send up to WithMaxMessageSize).
const maxPooledWire = 1 << 20

// wirePool holds batch body buffers (*[]byte) for wireBody.
var wirePool sync.Pool

func getWireBuf() *[]byte {
	if bp, ok := wirePool.Get().(*[]byte); ok {
		return bp
	}
	return new([]byte)
}

// releaseWire gives o's batch body buffer back to wirePool; p.send calls
// it when its last attempt has returned (see wireBody). A later attempt
// of o would encode its body again.
func (o *outgoing) releaseWire() {
	bp := o.wire
	if bp == nil {
		return
	}
	o.wire, o.wireFor = nil, nil
	if cap(*bp) > maxPooledWire {
		return
	}
	*bp = (*bp)[:0]
	wirePool.Put(bp)
}
