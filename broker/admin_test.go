package broker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// routeExists reports whether the NameServer has a route for topic.
func (e *env) routeExists(topic string) bool {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := protocol.GetRouteInfoRequestHeader{Topic: topic}
	resp, err := e.raw.Invoke(ctx, e.ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
	if err != nil {
		e.t.Fatalf("route of %s: %v", topic, err)
	}
	return resp.Code == protocol.Success
}

// TestAdminAPI drives the official admin API (examples/admin/topic and
// examples/admin/group): CreateTopic, FetchAllTopicList, DeleteTopic and
// GetAllSubscriptionGroup.
func TestAdminAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	officialClient(t)
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{e.ns})),
		// Credentials as in the examples: ignored with ACL off.
		admin.WithCredentials(primitive.Credentials{AccessKey: "RocketMQ", SecretKey: "12345678"}))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := context.Background()

	topic := uniq("AdminTopic")
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(e.addr),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3)); err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	eventually(t, 10*time.Second, "the new topic's route", func() bool { return e.routeExists(topic) })
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	if !slices.Contains(list.TopicList, topic) {
		t.Errorf("topic list %v lacks %s", list.TopicList, topic)
	}
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil || len(mqs) != 3 {
		t.Errorf("publish queues of %s: %d (%v), want 3", topic, len(mqs), err)
	}
	// The created topic takes messages on its three queues.
	p := e.producer()
	for i := 0; i < 6; i++ {
		sendOne(t, p, primitive.NewMessage(topic, []byte("x")))
	}
	eventually(t, 5*time.Second, "6 messages over 3 queues", func() bool {
		return e.maxOffset(topic, 0) == 2 && e.maxOffset(topic, 1) == 2 && e.maxOffset(topic, 2) == 2
	})

	// A consumer group shows up in the subscription group list.
	group := uniq("admin_cg")
	var ib inbox
	e.consumer(group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, ib.handler("c"))
	ib.waitLen(t, 6, 20*time.Second)
	groups, err := adm.GetAllSubscriptionGroup(ctx, e.addr, 3*time.Second)
	if err != nil {
		t.Fatalf("GetAllSubscriptionGroup: %v", err)
	}
	cfg, ok := groups.SubscriptionGroupTable[group]
	if !ok {
		t.Fatalf("subscription groups lack %s: %v", group, groups.SubscriptionGroupTable)
	}
	if cfg.GroupName != group || !cfg.ConsumeEnable || cfg.RetryQueueNums != 1 || cfg.RetryMaxTimes != 16 || cfg.BrokerId != 0 || cfg.WhichBrokerWhenConsumeSlowly != 1 {
		t.Errorf("group config %+v", cfg)
	}

	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(e.addr)); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if e.routeExists(topic) {
		t.Errorf("%s still has a route after DeleteTopic", topic)
	}
	list, err = adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	if slices.Contains(list.TopicList, topic) {
		t.Errorf("topic list still has %s after DeleteTopic", topic)
	}
	// The broker forgot the topic: a pull for it is refused.
	if resp, _ := e.pull("raw_reader", topic, 0, 0, 32, "TAG", "*"); resp.Code != protocol.TopicNotExist {
		t.Errorf("pull of a deleted topic: code %d %s", resp.Code, resp.Remark)
	}
	// System topics are refused by UPDATE_AND_CREATE_TOPIC.
	h := protocol.CreateTopicRequestHeader{Topic: "SCHEDULE_TOPIC_XXXX", DefaultTopic: "defaultTopic", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)); resp.Code == protocol.Success {
		t.Errorf("creating SCHEDULE_TOPIC_XXXX succeeded")
	}
	h.Topic = "bad name!"
	if resp := e.invoke(protocol.NewRequest(protocol.UpdateAndCreateTopic, h.Encode(), nil)); resp.Code != protocol.SystemError {
		t.Errorf("creating %q: code %d %s", h.Topic, resp.Code, resp.Remark)
	}
}

// TestCreateTopicThenRouteAtOnce: with two NameServers, a route lookup on
// either right after a successful UPDATE_AND_CREATE_TOPIC finds the topic,
// 50 times out of 50 (the broker registers the change with every
// NameServer before it answers, as RocketMQ does). Before, the answer came
// before the registration and lookups missed now and then (issue #20).
func TestCreateTopicThenRouteAtOnce(t *testing.T) {
	ns1, ns2 := nameservertest.Start(t), nameservertest.Start(t)
	b := brokertest.Start(t, ns1+";"+ns2, func(o *broker.Options) { o.RegisterNameServerPeriod = 30000 })
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	misses := 0
	for i := 0; i < 50; i++ {
		topic := fmt.Sprintf("CreateThenRoute%d", i)
		if err := createTopic(b.Addr(), topic, 2); err != nil {
			t.Fatal(err)
		}
		for _, ns := range []string{ns1, ns2} {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			h := protocol.GetRouteInfoRequestHeader{Topic: topic}
			resp, err := cl.Invoke(ctx, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, h.Encode(), nil))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != protocol.Success {
				misses++
			}
		}
	}
	if misses != 0 {
		t.Fatalf("%d of 100 route lookups right after a successful create found no route", misses)
	}
}
