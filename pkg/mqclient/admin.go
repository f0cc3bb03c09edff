package mqclient

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Admin manages topics and inspects groups and messages. It is safe for
// concurrent use; every call blocks until the brokers answer (each request
// bounded by WithRequestTimeout) or ctx is done.
type Admin struct {
	s     settings
	c     *Client
	state atomic.Int32
}

// NewAdmin returns an admin client; WithNameServers is required unless
// WithClient shares a Client.
func NewAdmin(opts ...Option) (*Admin, error) {
	s, c, err := memberSettings(opts)
	if err != nil {
		return nil, err
	}
	return &Admin{s: s, c: c}, nil
}

// Start takes a reference to the Client (starting its loops if nothing
// else did). It fails when called twice, after Shutdown, or when the
// shared Client was closed (ErrClosed).
func (a *Admin) Start(ctx context.Context) error { return a.c.join(&a.state) }

// Shutdown releases the Client, which closes every connection unless
// other members still use it. Safe to call more than once.
func (a *Admin) Shutdown(ctx context.Context) error {
	a.c.leave(&a.state)
	return nil
}

// TopicConfig describes a topic to create.
type TopicConfig struct {
	// Queues is the read and write queue count per broker. Default 8.
	Queues int
	// ReadQueues and WriteQueues, when positive, set the two counts apart
	// (they override Queues).
	ReadQueues, WriteQueues int
	// Perm is the permission (protocol.PermRead|PermWrite by default).
	Perm int32
	// Order marks the topic as ordered (informational for RocketMQ).
	Order bool
	// Cluster limits creation to the masters of one cluster; empty means
	// every master the NameServers know.
	Cluster string
	// BrokerAddrs, when set, lists the brokers to create it on instead.
	BrokerAddrs []string
}

// header returns the UPDATE_AND_CREATE_TOPIC header of topic, with the
// defaults filled in.
func (cfg TopicConfig) header(topic string) *protocol.CreateTopicRequestHeader {
	queues := cfg.Queues
	if queues <= 0 {
		queues = 8
	}
	read, write := cfg.ReadQueues, cfg.WriteQueues
	if read <= 0 {
		read = queues
	}
	if write <= 0 {
		write = queues
	}
	perm := cfg.Perm
	if perm == 0 {
		perm = protocol.PermRead | protocol.PermWrite
	}
	return &protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
		ReadQueueNums: int32(read), WriteQueueNums: int32(write), Perm: perm,
		TopicFilterType: protocol.TopicFilterSingleTag, Order: cfg.Order}
}

// ClusterInfo returns the brokers the NameServers know, by cluster.
func (a *Admin) ClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	resp, err := a.c.invokeNS(ctx, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("mqclient: cluster info: %w", err)
	}
	return protocol.DecodeClusterInfo(resp.Body)
}

func (a *Admin) masters(ctx context.Context, cluster string) ([]string, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, bd := range ci.BrokerAddrTable {
		if cluster != "" && bd.Cluster != cluster {
			continue
		}
		if addr, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			out = append(out, addr)
		} else {
			a.s.logger.Debug("mqclient: broker without master", "broker", name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no master in cluster %q", ErrBrokerNotFound, cluster)
	}
	return out, nil
}

// CreateTopic creates or updates topic on the selected masters.
func (a *Admin) CreateTopic(ctx context.Context, topic string, cfg TopicConfig) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	addrs := cfg.BrokerAddrs
	if len(addrs) == 0 {
		var err error
		if addrs, err = a.masters(ctx, cfg.Cluster); err != nil {
			return err
		}
	}
	var errs []error
	for _, addr := range addrs {
		if err := a.CreateTopicOn(ctx, addr, topic, cfg); err != nil {
			errs = append(errs, fmt.Errorf("create topic %s on %s: %w", topic, addr, err))
		}
	}
	return errors.Join(errs...)
}

// WaitTopic polls the NameServers until topic has a route with at least
// one readable and one writable queue, or ctx is done. Brokers register
// new topics with the NameServers asynchronously.
func (a *Admin) WaitTopic(ctx context.Context, topic string) error {
	for {
		d, err := a.c.queryRoute(ctx, topic)
		if err == nil {
			r := newRoute(topic, d, 0)
			if len(r.pub) > 0 && len(r.sub) > 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("mqclient: wait for topic %s: %w (last error: %v)", topic, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// DeleteTopic deletes topic from every master serving it and from the
// NameServers.
func (a *Admin) DeleteTopic(ctx context.Context, topic string) error {
	d, err := a.c.queryRoute(ctx, topic)
	if err != nil {
		return err
	}
	h := protocol.TopicHeader{Topic: topic}
	var errs []error
	for _, bd := range d.BrokerDatas {
		addr, ok := bd.BrokerAddrs[protocol.MasterID]
		if !ok {
			continue
		}
		resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.DeleteTopicInBroker, h.Encode(), nil), a.s.requestTimeout)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s on %s: %w", topic, addr, err))
		}
	}
	for _, ns := range a.s.nameServers {
		resp, err := a.c.invoke(ctx, ns, protocol.NewRequest(protocol.DeleteTopicInNameServer, h.Encode(), nil), a.s.requestTimeout)
		if err == nil {
			err = resp.Err()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s on name server %s: %w", topic, ns, err))
		}
	}
	a.c.mu.Lock()
	delete(a.c.routes, topic)
	a.c.mu.Unlock()
	return errors.Join(errs...)
}

// Topics lists every topic the NameServers know.
func (a *Admin) Topics(ctx context.Context) ([]string, error) {
	resp, err := a.c.invokeNS(ctx, protocol.NewRequest(protocol.GetAllTopicListFromNameServer, nil, nil))
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("mqclient: topic list: %w", err)
	}
	l, err := protocol.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, err
	}
	sort.Strings(l.TopicList)
	return l.TopicList, nil
}

// QueueProgress is a group's position in one queue.
type QueueProgress struct {
	Queue          Queue
	BrokerOffset   int64 // next offset the broker will write
	ConsumerOffset int64 // committed offset (-1: none)
	Lag            int64
}

// ConsumerProgress returns group's committed offset and lag on every
// queue of topic. It uses only GET_MAX_OFFSET and QUERY_CONSUMER_OFFSET,
// so it works with any RocketMQ 4.x broker.
func (a *Admin) ConsumerProgress(ctx context.Context, group, topic string) ([]QueueProgress, error) {
	r, err := a.c.updateRoute(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	var out []QueueProgress
	for _, q := range r.sub {
		addr, err := a.c.masterAddr(ctx, q.BrokerName, topic)
		if err != nil {
			return nil, err
		}
		qh := protocol.QueueRequestHeader{Topic: q.Topic, QueueID: q.QueueID}
		resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, qh.Encode(), nil), a.s.requestTimeout)
		if err != nil {
			return nil, err
		}
		var mo protocol.OffsetResponseHeader
		if err := mo.Decode(resp.ExtFields); err != nil {
			return nil, fmt.Errorf("mqclient: max offset of %s: %w", q, err)
		}
		co, err := a.CommittedOffset(ctx, addr, group, q)
		if err != nil {
			return nil, err
		}
		p := QueueProgress{Queue: q, BrokerOffset: mo.Offset, ConsumerOffset: co}
		p.Lag = p.BrokerOffset - max(p.ConsumerOffset, 0)
		out = append(out, p)
	}
	return out, nil
}

// QueryByKey returns up to maxNum messages of topic stored between begin
// and end whose KEYS contain key, from every broker of the topic.
func (a *Admin) QueryByKey(ctx context.Context, topic, key string, maxNum int, begin, end time.Time) ([]*MessageExt, error) {
	return a.query(ctx, topic, key, maxNum, begin, end, false)
}

// QueryByUniqID returns the messages whose client id (UNIQ_KEY, what
// SendResult.MsgID holds) is id: normally one, more after retries.
func (a *Admin) QueryByUniqID(ctx context.Context, topic, id string) ([]*MessageExt, error) {
	return a.query(ctx, topic, id, 32, time.UnixMilli(0), time.Now().Add(time.Hour), true)
}

func (a *Admin) query(ctx context.Context, topic, key string, maxNum int, begin, end time.Time, uniq bool) ([]*MessageExt, error) {
	r, err := a.c.updateRoute(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: int32(maxNum),
		BeginTimestamp: begin.UnixMilli(), EndTimestamp: end.UnixMilli(), UniqueKeyQuery: uniq}
	var out []*MessageExt
	for _, bd := range r.data.BrokerDatas {
		addr, ok := bd.BrokerAddrs[protocol.MasterID]
		if !ok {
			continue
		}
		resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.QueryMessage, h.Encode(), nil), a.s.requestTimeout)
		if err != nil {
			return nil, err
		}
		if resp.Code == protocol.QueryNotFound {
			continue
		}
		if err := resp.Err(); err != nil {
			return nil, fmt.Errorf("mqclient: query %s on %s: %w", key, addr, err)
		}
		recs, err := protocol.DecodeMessages(resp.Body)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if rec.Topic != topic {
				continue
			}
			if uniq && rec.Property(protocol.PropUniqKey) != key {
				continue
			}
			out = append(out, fromStored(rec, bd.BrokerName))
		}
	}
	return out, nil
}

// ViewMessage returns the message with the given offset message id
// (SendResult.OffsetMsgID / MessageExt.OffsetMsgID).
func (a *Admin) ViewMessage(ctx context.Context, offsetMsgID string) (*MessageExt, error) {
	host, off, err := protocol.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidMessage, err)
	}
	h := protocol.ViewMessageRequestHeader{Offset: off}
	resp, err := a.c.invoke(ctx, host.String(), protocol.NewRequest(protocol.ViewMessageByID, h.Encode(), nil), a.s.requestTimeout)
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, fmt.Errorf("mqclient: view %s: %w", offsetMsgID, err)
	}
	m, _, err := protocol.DecodeStored(resp.Body, false)
	if err != nil {
		return nil, err
	}
	return fromStored(m, ""), nil
}

// Resend sends a copy of a stored message (typically one in a %DLQ% or
// %RETRY% topic) back to its original topic with p, keeping body, tag,
// keys and user properties. It returns the new send result.
func (a *Admin) Resend(ctx context.Context, p *Producer, offsetMsgID string) (*SendResult, error) {
	m, err := a.ViewMessage(ctx, offsetMsgID)
	if err != nil {
		return nil, err
	}
	topic := m.Topic
	if rt := m.Properties[protocol.PropRetryTopic]; rt != "" {
		topic = rt
	} else if strings.HasPrefix(topic, DLQTopicPrefix) || strings.HasPrefix(topic, RetryTopicPrefix) {
		if rt := m.Properties[protocol.PropRealTopic]; rt != "" {
			topic = rt
		}
	}
	out := &Message{Topic: topic, Body: m.Body, Tag: m.Tag, Keys: m.Keys, ShardingKey: m.ShardingKey, Flag: m.Flag,
		Properties: map[string]string{}}
	for k, v := range m.Properties {
		if isUserProperty(k) {
			out.Properties[k] = v
		}
	}
	out.Properties["RESEND_OF"] = m.MsgID
	out.Properties["RESEND_COUNT"] = strconv.Itoa(int(m.ReconsumeTimes))
	return p.Send(ctx, out)
}

// isUserProperty tells user properties from the ones brokers and clients
// manage (all upper case with underscores by convention).
func isUserProperty(k string) bool {
	switch k {
	case protocol.PropUniqKey, protocol.PropRetryTopic, protocol.PropOriginMessageID, protocol.PropRealTopic,
		protocol.PropRealQueueID, protocol.PropDelayLevel, protocol.PropCluster, protocol.PropMinOffset,
		protocol.PropMaxOffset, protocol.PropReconsumeTime, protocol.PropMaxReconsumeTimes,
		protocol.PropConsumeStartTime, protocol.PropWaitStoreMsgOK, protocol.PropTransactionPrepared,
		protocol.PropProducerGroup, protocol.PropMsgRegion, protocol.PropTraceSwitch:
		return false
	}
	return true
}

// TopicRoute returns topic's route as the NameServers report it. The
// error wraps ErrTopicNotFound when no NameServer knows the topic.
func (a *Admin) TopicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	return a.c.queryRoute(ctx, topic)
}

// Invoke sends req to the broker or NameServer at addr and returns its
// answer, for admin requests this client has no method for (the typed
// ones are in admin_broker.go: half messages, replication status, timer
// recall, offsets, topic and consume stats, connections). The response code is not
// checked (use resp.Err()), except REQUEST_CODE_NOT_SUPPORTED, which
// returns an error wrapping ErrNotSupported. The call is bounded by
// WithRequestTimeout and ctx.
func (a *Admin) Invoke(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	return a.c.invoke(ctx, addr, req, a.s.requestTimeout)
}
