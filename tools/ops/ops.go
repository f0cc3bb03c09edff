// Package ops holds what Tide's operator tools, the web console
// (tools/console) and the command line (tools/mqadmin), both do over a
// *mqclient.Admin: list the brokers, merge a consumer group's connections
// from every master, find a message by id, copy a dead letter for a
// resend, show a message, and read the points in time operators type.
// Each tool keeps its own presentation (HTML and JSON pages, tables);
// the logic lives here once.
//
// Functions are safe for concurrent use when the Admin is.
package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// Sentinel errors.
var (
	// ErrNoBroker: the NameServers know no broker (in the cluster asked for).
	ErrNoBroker = errors.New("no broker")
	// ErrNotFound: no message has the id asked for.
	ErrNotFound = errors.New("message not found")
	// ErrNeedTopic: a unique (client) message id is looked up per topic.
	ErrNeedTopic = errors.New("a topic is needed")
	// ErrNoOrigin: a dead letter without RETRY_TOPIC: its original topic
	// is unknown.
	ErrNoOrigin = errors.New("the dead letter has no RETRY_TOPIC property: original topic unknown")
	// ErrBadTime: a point in time that could not be read.
	ErrBadTime = errors.New("bad time")
)

// Broker is one broker process as the NameServers list it.
type Broker struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId"`
	Addr       string `json:"addr"`
}

// Brokers lists the brokers the NameServers know, sorted by cluster,
// name and id; only those of cluster when it is not "", only masters
// with mastersOnly. It returns ErrNoBroker for an empty list only when a
// cluster was asked for or mastersOnly is set (callers act on them).
func Brokers(ctx context.Context, a *mqclient.Admin, cluster string, mastersOnly bool) ([]Broker, error) {
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster info: %w", err)
	}
	var out []Broker
	for name, bd := range ci.BrokerAddrTable {
		if cluster != "" && bd.Cluster != cluster {
			continue
		}
		for id, addr := range bd.BrokerAddrs {
			if !mastersOnly || id == protocol.MasterID {
				out = append(out, Broker{Cluster: bd.Cluster, BrokerName: name, BrokerID: id, Addr: addr})
			}
		}
	}
	slices.SortFunc(out, func(x, y Broker) int {
		return cmp.Or(cmp.Compare(x.Cluster, y.Cluster), cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.BrokerID, y.BrokerID))
	})
	if len(out) == 0 && (cluster != "" || mastersOnly) {
		if cluster != "" {
			return nil, fmt.Errorf("%w in cluster %q", ErrNoBroker, cluster)
		}
		return nil, fmt.Errorf("%w: the NameServers know no master", ErrNoBroker)
	}
	return out, nil
}

// GroupConnections are a consumer group's online clients and
// subscriptions, merged from every master.
type GroupConnections struct {
	Connections      []protocol.Connection       `json:"connections"`
	Subscriptions    []protocol.SubscriptionData `json:"subscriptions"`
	ConsumeType      string                      `json:"consumeType,omitempty"`
	MessageModel     string                      `json:"messageModel,omitempty"`
	ConsumeFromWhere string                      `json:"consumeFromWhere,omitempty"`
}

// Connections asks every broker of masters for group's connections
// (GET_CONSUMER_CONNECTION_LIST) and merges them: each client and each
// subscribed topic once, sorted. online is false when no broker knows a
// live member.
func Connections(ctx context.Context, a *mqclient.Admin, masters []Broker, group string) (gc *GroupConnections, online bool, err error) {
	gc = &GroupConnections{Connections: []protocol.Connection{}, Subscriptions: []protocol.SubscriptionData{}}
	seenClient, seenTopic := map[string]bool{}, map[string]bool{}
	for _, b := range masters {
		cc, err := a.ConsumerConnections(ctx, b.Addr, group)
		if err != nil {
			return nil, false, fmt.Errorf("connections of %s on %s: %w", group, b.BrokerName, err)
		}
		if cc == nil {
			continue
		}
		online = true
		gc.ConsumeType, gc.MessageModel, gc.ConsumeFromWhere = cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere
		gc.Connections = appendNew(gc.Connections, seenClient, cc.ConnectionSet)
		for t, sd := range cc.SubscriptionTable {
			if !seenTopic[t] {
				seenTopic[t] = true
				gc.Subscriptions = append(gc.Subscriptions, sd)
			}
		}
	}
	sort.Slice(gc.Connections, func(i, j int) bool { return gc.Connections[i].ClientID < gc.Connections[j].ClientID })
	sort.Slice(gc.Subscriptions, func(i, j int) bool { return gc.Subscriptions[i].Topic < gc.Subscriptions[j].Topic })
	return gc, online, nil
}

// ProducerConnections asks every broker of masters for producer group's
// live members (GET_PRODUCER_CONNECTION_LIST) and merges them: each client
// once, sorted by client id. online is false when no broker knows one.
func ProducerConnections(ctx context.Context, a *mqclient.Admin, masters []Broker, group string) (conns []protocol.Connection, online bool, err error) {
	conns = []protocol.Connection{}
	seen := map[string]bool{}
	for _, b := range masters {
		pc, err := a.ProducerConnections(ctx, b.Addr, group)
		if err != nil {
			return nil, false, fmt.Errorf("producers of %s on %s: %w", group, b.BrokerName, err)
		}
		if pc == nil {
			continue
		}
		online = true
		conns = appendNew(conns, seen, pc.ConnectionSet)
	}
	sort.Slice(conns, func(i, j int) bool { return conns[i].ClientID < conns[j].ClientID })
	return conns, online, nil
}

// appendNew appends the connections of add whose client is not in seen
// yet, and marks them seen: one entry per client across brokers.
func appendNew(conns []protocol.Connection, seen map[string]bool, add []protocol.Connection) []protocol.Connection {
	for _, c := range add {
		if !seen[c.ClientID] {
			seen[c.ClientID] = true
			conns = append(conns, c)
		}
	}
	return conns
}

// FindByID looks id up as an offset message id (any topic), then as a
// unique (client) message id of topic (none found: an empty list). A message found by offset id
// without a broker name gets the name of the broker at its store host.
func FindByID(ctx context.Context, a *mqclient.Admin, topic, id string) ([]*mqclient.MessageExt, error) {
	if _, _, err := protocol.ParseOffsetMsgID(id); err == nil {
		m, err := a.ViewMessage(ctx, id)
		if err == nil {
			if m.Queue.BrokerName == "" {
				m.Queue.BrokerName = brokerNameAt(ctx, a, m.StoreHost)
			}
			return []*mqclient.MessageExt{m}, nil
		}
		if topic == "" {
			return nil, fmt.Errorf("%w: %s: %v", ErrNotFound, id, err)
		}
	}
	if topic == "" {
		return nil, fmt.Errorf("%w: %q is not an offset message id; give its topic to look it up as a unique id", ErrNeedTopic, id)
	}
	return a.QueryByUniqID(ctx, topic, id)
}

// brokerNameAt maps a broker address to its name ("" if none).
func brokerNameAt(ctx context.Context, a *mqclient.Admin, addr string) string {
	bs, err := Brokers(ctx, a, "", false)
	if err != nil {
		return ""
	}
	for _, b := range bs {
		if b.Addr == addr {
			return b.BrokerName
		}
	}
	return ""
}

// QueueProgress is a consumer group's position in one queue.
// LastConsumed (the store time of the last message consumed) is left to
// each tool's JSON shape.
type QueueProgress struct {
	Topic          string    `json:"topic"`
	BrokerName     string    `json:"brokerName"`
	QueueID        int32     `json:"queueId"`
	BrokerOffset   int64     `json:"brokerOffset"`
	ConsumerOffset int64     `json:"consumerOffset"`
	Lag            int64     `json:"lag"`
	LastConsumed   time.Time `json:"-"`
}

// Progress asks every broker of masters for group's consume stats
// (GET_CONSUME_STATS; topic "" = every topic of the group) and merges
// them, sorted by topic, broker and queue; tps is the sum of the brokers'
// consume rates.
func Progress(ctx context.Context, a *mqclient.Admin, masters []Broker, group, topic string) (qs []QueueProgress, tps float64, err error) {
	qs = []QueueProgress{}
	for _, b := range masters {
		st, err := a.ConsumeStats(ctx, b.Addr, group, topic)
		if err != nil {
			return nil, 0, fmt.Errorf("consume stats of %s on %s: %w", group, b.BrokerName, err)
		}
		tps += st.ConsumeTps
		for q, w := range st.OffsetTable {
			qs = append(qs, QueueProgress{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: q.QueueID, BrokerOffset: w.BrokerOffset,
				ConsumerOffset: w.ConsumerOffset, Lag: max(0, w.BrokerOffset-w.ConsumerOffset), LastConsumed: time.UnixMilli(w.LastTimestamp)})
		}
	}
	slices.SortFunc(qs, func(x, y QueueProgress) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.QueueID, y.QueueID))
	})
	return qs, tps, nil
}
