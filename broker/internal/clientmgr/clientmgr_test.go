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

// TestRemoveChannelIndex: RemoveChannel finds a channel's groups through
// the reverse index, which every way of leaving a group keeps in step
// (unregister, expiry, removal), so that removal costs the channel's groups
// and not every group (the broker removes every connection at shutdown).
func TestRemoveChannelIndex(t *testing.T) {
	cons := func(group string) Consumer {
		return Consumer{Group: group, MessageModel: "CLUSTERING", Subscriptions: []Subscription{sub("t", 1)}}
	}
	for _, tc := range []struct {
		name string
		// setup runs on a manager where channels 1 and 2 are both members
		// of consumer groups c1, c2 and producer groups p1, p2.
		setup      func(m *Manager, now *time.Time)
		wantGroups []string // RemoveChannel(ch(1)) consumer groups
	}{
		{"member of every group", func(*Manager, *time.Time) {}, []string{"c1", "c2"}},
		{"unregistered from c1 and p1", func(m *Manager, _ *time.Time) {
			m.UnregisterClient(ch(1), "p1", "c1")
		}, []string{"c2"}},
		{"expired, then back in c2", func(m *Manager, now *time.Time) {
			*now = now.Add(ChannelExpiry + time.Second)
			m.RegisterConsumer(ClientInfo{ClientID: "b", Channel: ch(2)}, cons("c1"))
			m.RegisterConsumer(ClientInfo{ClientID: "b", Channel: ch(2)}, cons("c2"))
			m.RegisterProducer(ClientInfo{ClientID: "b", Channel: ch(2)}, "p1")
			m.RegisterProducer(ClientInfo{ClientID: "b", Channel: ch(2)}, "p2")
			m.Expire() // drops channel 1 everywhere
			m.RegisterConsumer(ClientInfo{ClientID: "a", Channel: ch(1)}, cons("c2"))
		}, []string{"c2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			m := New(func() time.Time { return now })
			for _, c := range []ClientInfo{{ClientID: "a", Channel: ch(1)}, {ClientID: "b", Channel: ch(2)}} {
				m.RegisterConsumer(c, cons("c1"))
				m.RegisterConsumer(c, cons("c2"))
				m.RegisterProducer(c, "p1")
				m.RegisterProducer(c, "p2")
			}
			tc.setup(m, &now)
			groups, ids := m.RemoveChannel(ch(1))
			if !reflect.DeepEqual(groups, tc.wantGroups) || len(ids) != len(groups) {
				t.Fatalf("RemoveChannel(1) = %v %v, want groups %v", groups, ids, tc.wantGroups)
			}
			for _, id := range ids {
				if id != "a" {
					t.Fatalf("client ids %v, want a", ids)
				}
			}
			if g, _ := m.RemoveChannel(ch(1)); g != nil {
				t.Fatalf("second RemoveChannel(1) = %v", g)
			}
			// Channel 2 is untouched, and goes the same way.
			for _, g := range []string{"c1", "c2"} {
				if ids := m.ConsumerIDs(g); !reflect.DeepEqual(ids, []string{"b"}) {
					t.Fatalf("group %s: %v, want [b]", g, ids)
				}
			}
			for _, g := range []string{"p1", "p2"} {
				if p := m.ProducerChannels(g); len(p) != 1 || p[0].ClientID != "b" {
					t.Fatalf("producer group %s: %+v", g, p)
				}
			}
			if g, _ := m.RemoveChannel(ch(2)); !reflect.DeepEqual(g, []string{"c1", "c2"}) {
				t.Fatalf("RemoveChannel(2) = %v", g)
			}
			if len(m.consumers) != 0 || len(m.producers) != 0 || len(m.byChan) != 0 {
				t.Fatalf("left behind: %d consumer groups, %d producer groups, %d indexed channels",
					len(m.consumers), len(m.producers), len(m.byChan))
			}
		})
	}
}
