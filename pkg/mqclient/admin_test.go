package mqclient_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/tidetest"
)

func TestAdminTopicsAndProgress(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := e.Topic(t, 2)
	topics, err := e.Admin.Topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(topics, topic) {
		t.Fatalf("%s missing from %v", topic, topics)
	}
	ci, err := e.Admin.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ci.BrokerAddrTable) != 1 {
		t.Fatalf("cluster info %+v", ci)
	}

	p := e.Producer(t)
	res, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("hello"), Keys: []string{"order-42"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 9; i++ {
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := e.Admin.ViewMessage(ctx, res.OffsetMsgID)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Body) != "hello" || m.MsgID != res.MsgID {
		t.Fatalf("view: %+v", m)
	}
	tidetest.WaitFor(t, 5*time.Second, "key index", func() bool {
		ms, err := e.Admin.QueryByKey(ctx, topic, "order-42", 10, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		return err == nil && len(ms) == 1 && string(ms[0].Body) == "hello"
	})
	ms, err := e.Admin.QueryByUniqID(ctx, topic, res.MsgID)
	if err != nil || len(ms) != 1 {
		t.Fatalf("query by id: %v %d", err, len(ms))
	}

	rec := tidetest.NewRecorder()
	e.Consumer(t, "g-progress", topic, rec.Handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	tidetest.WaitFor(t, 10*time.Second, "consumed", func() bool { return rec.Distinct() == 10 })
	tidetest.WaitFor(t, 5*time.Second, "lag 0", func() bool {
		prog, err := e.Admin.ConsumerProgress(ctx, "g-progress", topic)
		if err != nil || len(prog) != 2 {
			return false
		}
		var lag int64
		for _, q := range prog {
			lag += q.Lag
		}
		return lag == 0
	})

	if err := e.Admin.DeleteTopic(ctx, topic); err != nil {
		t.Fatal(err)
	}
	topics, _ = e.Admin.Topics(ctx)
	if slices.Contains(topics, topic) {
		t.Errorf("%s still listed after delete", topic)
	}
}

func TestAdminTopicRouteAndInvoke(t *testing.T) {
	e := startEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := e.Topic(t, 2)
	r, err := e.Admin.TopicRoute(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.BrokerDatas) != 1 || len(r.QueueDatas) != 1 || r.QueueDatas[0].ReadQueueNums != 2 {
		t.Fatalf("route %+v", r)
	}
	if _, err := e.Admin.TopicRoute(ctx, "no-such-topic"); !errors.Is(err, mqclient.ErrTopicNotFound) {
		t.Fatalf("unknown topic: %v", err)
	}
	addr := r.BrokerDatas[0].BrokerAddrs[protocol.MasterID]
	h := protocol.TopicHeader{Topic: topic}
	resp, err := e.Admin.Invoke(ctx, addr, protocol.NewRequest(protocol.GetTopicStatsInfo, h.Encode(), nil))
	if err != nil || resp.Err() != nil {
		t.Fatalf("topic stats: %v %v", err, resp.Err())
	}
	st, err := protocol.DecodeTopicStatsTable(resp.Body)
	if err != nil || len(st.OffsetTable) != 2 {
		t.Fatalf("topic stats %v %+v", err, st)
	}
	if _, err := e.Admin.Invoke(ctx, addr, protocol.NewRequest(9999, nil, nil)); !errors.Is(err, mqclient.ErrNotSupported) {
		t.Fatalf("unknown code: %v", err)
	}
}
