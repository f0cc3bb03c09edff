package mqclient

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// PullStatus is the outcome of one pull.
type PullStatus int

const (
	// PullFound: Messages holds at least one message.
	PullFound PullStatus = iota
	// PullNoNewMessage: the queue has nothing at the offset (after
	// waiting up to the poll timeout when the pull allowed it).
	PullNoNewMessage
	// PullNoMatched: messages were scanned but none matched the filter.
	PullNoMatched
	// PullOffsetIllegal: the offset was outside the queue; continue at
	// NextOffset.
	PullOffsetIllegal
)

// PullResult is what one pull returned.
type PullResult struct {
	Status     PullStatus
	Messages   []*MessageExt
	NextOffset int64
	MinOffset  int64
	MaxOffset  int64
}

// PullConsumer reads queues at offsets the caller chooses: no rebalancing,
// no handler goroutines, no automatic commits. It suits batch jobs and
// replays. Safe for concurrent use; every call blocks until the broker
// answers or ctx is done.
type PullConsumer struct {
	s       settings
	group   string
	c       *Client
	state   atomic.Int32
	offsets *remoteOffsets
}

// NewPullConsumer returns a pull consumer of group; WithNameServers is
// required unless WithClient shares a Client. The group is not
// heartbeated: a pull consumer is no member of a rebalancing group.
func NewPullConsumer(group string, opts ...Option) (*PullConsumer, error) {
	if !validName(group) || len(group) > 255 {
		return nil, fmt.Errorf("%w: consumer group %q", ErrInvalidOption, group)
	}
	s, c, err := memberSettings(opts)
	if err != nil {
		return nil, err
	}
	pc := &PullConsumer{s: s, group: group, c: c}
	pc.offsets = &remoteOffsets{pc: &PushConsumer{s: s, group: group, c: pc.c}}
	return pc, nil
}

// Start takes a reference to the Client (starting its loops if nothing
// else did). It fails when called twice, after Shutdown, or when the
// shared Client was closed (ErrClosed).
func (pc *PullConsumer) Start(ctx context.Context) error { return pc.c.join(&pc.state) }

// Shutdown releases the Client, which closes every connection unless
// other members still use it. Safe to call more than once.
func (pc *PullConsumer) Shutdown(ctx context.Context) error {
	pc.c.leave(&pc.state)
	return nil
}

// Queues returns topic's readable queues.
func (pc *PullConsumer) Queues(ctx context.Context, topic string) ([]Queue, error) {
	r, err := pc.c.updateRoute(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	return append([]Queue(nil), r.sub...), nil
}

// Pull reads up to max messages of q from offset that match expr ("*" or
// tags joined by "||"). With wait > 0 the broker holds an empty pull up to
// that long (long polling).
func (pc *PullConsumer) Pull(ctx context.Context, q Queue, expr string, offset int64, max int, wait time.Duration) (*PullResult, error) {
	if pc.state.Load() != stateRunning {
		return nil, ErrNotStarted
	}
	if _, err := pc.c.route(ctx, q.Topic, false); err != nil {
		return nil, err
	}
	addr, err := pc.c.masterAddr(ctx, q.BrokerName, q.Topic)
	if err != nil {
		return nil, err
	}
	sd := protocol.NewSubscriptionData(q.Topic, expr)
	flag := protocol.PullSubscription
	if wait > 0 {
		flag |= protocol.PullSuspend
	}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: pc.group, Topic: q.Topic, QueueID: q.QueueID, QueueOffset: offset,
		MaxMsgNums: int32(max), SysFlag: flag, SuspendTimeoutMillis: wait.Milliseconds(), Subscription: sd.SubString,
		ExpressionType: protocol.ExpressionTypeTag}
	resp, err := pc.c.invoke(ctx, addr, protocol.NewTypedRequest(protocol.PullMessage, &h, nil), wait+pc.s.requestTimeout)
	if err != nil {
		return nil, err
	}
	res := &PullResult{}
	switch resp.Code {
	case protocol.Success:
		res.Status = PullFound
	case protocol.PullNotFound:
		res.Status = PullNoNewMessage
	case protocol.PullRetryImmediately:
		res.Status = PullNoMatched
	case protocol.PullOffsetMoved:
		res.Status = PullOffsetIllegal
	default:
		return nil, fmt.Errorf("mqclient: pull %s at %d: %w", q, offset, resp.Err())
	}
	var rh protocol.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, err
	}
	res.NextOffset, res.MinOffset, res.MaxOffset = rh.NextBeginOffset, rh.MinOffset, rh.MaxOffset
	if resp.Code == protocol.Success {
		var keep func(string) bool
		if !sd.MatchesAll() {
			keep = sd.MatchesTag
		}
		msgs, n, _, err := decodePull(resp.Body, q, math.MinInt64, keep)
		if err != nil && n == 0 {
			return nil, err
		}
		if len(msgs) > 0 {
			res.Messages = msgs
		}
		if len(res.Messages) == 0 {
			res.Status = PullNoMatched
		}
	}
	return res, nil
}

// CommittedOffset returns the group's stored offset of q, or -1.
func (pc *PullConsumer) CommittedOffset(ctx context.Context, q Queue) (int64, error) {
	if _, err := pc.c.route(ctx, q.Topic, false); err != nil {
		return 0, err
	}
	return pc.offsets.read(ctx, q)
}

// Commit stores offset (the next offset to read) as the group's offset of
// q on its broker.
func (pc *PullConsumer) Commit(ctx context.Context, q Queue, offset int64) error {
	if _, err := pc.c.route(ctx, q.Topic, false); err != nil {
		return err
	}
	return pc.offsets.write(ctx, q, offset, false)
}
