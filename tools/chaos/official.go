package chaos

import (
	"context"
	"fmt"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// officialClient is the official Go client (rocketmq-client-go v2.1.2,
// unchanged) as a second producer (sync sends to the plain topic) and a
// second consumer group of the plain topic.
type officialClient struct {
	p rocketmq.Producer
	c rocketmq.PushConsumer
}

func startOfficial(ctx context.Context, w *Workload) (*officialClient, error) {
	rlog.SetLogLevel("fatal") // it logs every expected failure at error level
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(w.ns)),
		producer.WithGroupName("chaos-official-producer"),
		producer.WithInstanceName("chaos-official"),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(6*time.Second),
	)
	if err != nil {
		return nil, fmt.Errorf("official producer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("official producer: %w", err)
	}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(w.ns)),
		consumer.WithGroupName(GroupOfficial),
		consumer.WithInstance("chaos-official"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		p.Shutdown()
		return nil, fmt.Errorf("official consumer: %w", err)
	}
	err = c.Subscribe(TopicPlain, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			st := time.UnixMilli(m.StoreTimestamp)
			id := m.GetProperty(propID)
			w.rec.Record(Event{Process: "c-official", Type: OK, Op: OpConsume, Group: GroupOfficial, Client: "official",
				Topic: m.Topic, IDs: []string{id}, MsgID: m.MsgId, Offset: m.QueueOffset, StoreTime: &st,
				Queue: fmt.Sprintf("%s/%d", m.Queue.BrokerName, m.Queue.QueueId), Reconsume: m.ReconsumeTimes})
			w.track.delivered(GroupOfficial, id)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		p.Shutdown()
		return nil, fmt.Errorf("official consumer: %w", err)
	}
	if err := c.Start(); err != nil {
		p.Shutdown()
		return nil, fmt.Errorf("official consumer: %w", err)
	}
	return &officialClient{p: p, c: c}, nil
}

// send sends one message with the official producer.
func (o *officialClient) send(w *Workload) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	id := w.nextID("o")
	m := primitive.NewMessage(TopicPlain, []byte("chaos "+id))
	m.WithProperty(propID, id)
	m.WithKeys([]string{id})
	inv := w.rec.Record(Event{Process: "p-official", Type: Invoke, Op: OpSend, Topic: TopicPlain, IDs: []string{id}})
	res, err := o.p.SendSync(ctx, m)
	e := Event{Process: inv.Process, Op: OpSend, Topic: TopicPlain, IDs: inv.IDs}
	switch {
	case err != nil:
		e.Type, e.Error = Info, err.Error()
	case res.Status == primitive.SendOK:
		e.Type, e.Status, e.MsgID = OK, "SEND_OK", res.MsgID
	default:
		// FLUSH_*_TIMEOUT, SLAVE_NOT_AVAILABLE: stored on the master
		e.Type, e.Status, e.MsgID = OK, statusName(res.Status), res.MsgID
	}
	w.rec.Record(e)
	if e.Type == OK {
		w.track.acked(TopicPlain, id, w.durableStatus(e.Status))
	}
}

func statusName(s primitive.SendStatus) string {
	switch s {
	case primitive.SendOK:
		return "SEND_OK"
	case primitive.SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case primitive.SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case primitive.SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return fmt.Sprintf("status %d", s)
}

func (o *officialClient) close() {
	_ = o.c.Shutdown()
	_ = o.p.Shutdown()
}
