package clientmgr

import (
	"reflect"
	"testing"
	"time"
)

type ch uint64

func (c ch) ID() uint64 { return uint64(c) }

func sub(topic string, ver int64) Subscription {
	return Subscription{Topic: topic, Expression: "*", ExpressionType: "TAG", SubVersion: ver}
}

func TestManagerConsumerMembership(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New(func() time.Time { return now })
	a := ClientInfo{ClientID: "10.0.0.1@1", Channel: ch(1)}
	b := ClientInfo{ClientID: "10.0.0.2@2", Channel: ch(2)}
	c := Consumer{Group: "g", MessageModel: "CLUSTERING", Subscriptions: []Subscription{sub("t", 1), sub("%RETRY%g", 1)}}

	if !m.RegisterConsumer(a, c) {
		t.Fatal("first member must report a change")
	}
	if m.RegisterConsumer(a, c) {
		t.Fatal("repeated heartbeat must not report a change")
	}
	if !m.RegisterConsumer(b, c) {
		t.Fatal("second member must report a change")
	}
	if got := m.ConsumerIDs("g"); !reflect.DeepEqual(got, []string{"10.0.0.1@1", "10.0.0.2@2"}) {
		t.Fatalf("ids %v", got)
	}

	// subVersion: an older one does not replace, a newer one does
	c2 := Consumer{Group: "g", Subscriptions: []Subscription{{Topic: "t", Expression: "TagA", SubVersion: 0}, sub("%RETRY%g", 1)}}
	m.RegisterConsumer(a, c2)
	if s, _ := m.Subscription("g", "t"); s.Expression != "*" {
		t.Fatalf("older subVersion replaced the subscription: %+v", s)
	}
	c2.Subscriptions[0].SubVersion = 5
	m.RegisterConsumer(a, c2)
	if s, _ := m.Subscription("g", "t"); s.Expression != "TagA" {
		t.Fatalf("newer subVersion ignored: %+v", s)
	}
	// a topic missing from a heartbeat is removed
	if !m.RegisterConsumer(a, Consumer{Group: "g", Subscriptions: []Subscription{sub("%RETRY%g", 1)}}) {
		t.Fatal("topic set change must report a change")
	}
	if _, ok := m.Subscription("g", "t"); ok {
		t.Fatal("dropped topic still subscribed")
	}

	groups, ids := m.RemoveChannel(ch(2))
	if !reflect.DeepEqual(groups, []string{"g"}) || !reflect.DeepEqual(ids, []string{"10.0.0.2@2"}) {
		t.Fatalf("remove: %v %v", groups, ids)
	}
	now = now.Add(ChannelExpiry + time.Second)
	expired, groups := m.Expire()
	if len(expired) != 1 || !reflect.DeepEqual(groups, []string{"g"}) {
		t.Fatalf("expire: %v %v", expired, groups)
	}
	if _, ok := m.ConsumerGroup("g"); ok {
		t.Fatal("group without members still present")
	}
}

func TestManagerProducers(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New(func() time.Time { return now })
	m.RegisterProducer(ClientInfo{ClientID: "p1", Channel: ch(1)}, "pg")
	now = now.Add(time.Second)
	m.RegisterProducer(ClientInfo{ClientID: "p2", Channel: ch(2)}, "pg")
	got := m.ProducerChannels("pg")
	if len(got) != 2 || got[0].ClientID != "p2" {
		t.Fatalf("producers %+v", got)
	}
	if c, ok := m.FindProducerByClientID("p1"); !ok || c.ID() != 1 {
		t.Fatal("find by client id")
	}
	m.UnregisterClient(ch(1), "pg", "")
	if len(m.ProducerChannels("pg")) != 1 {
		t.Fatal("unregister")
	}
}
