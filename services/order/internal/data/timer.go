package data

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/services/order/internal/biz"
)

// timerHandle is what Recall needs of a timer message's SendResult,
// stored as JSON in orders.cancel_timer.
type timerHandle struct {
	MsgID     string `json:"id"`
	Topic     string `json:"topic"`
	Broker    string `json:"broker"`
	Queue     int32  `json:"queue"`
	DeliverAt int64  `json:"at"` // Unix ms
}

type cancelTimer struct {
	p *mqclient.Producer
}

// NewCancelTimer returns the biz.CancelTimer: an OrderCancelTimer message
// on order-cancel-timer delivered at the deadline (Message.DeliverAt, a
// broker timer message), recalled with Producer.Recall.
//
// TODO(delay): switch to pkg/mqclient/delay (cancellation timers with
// bounds checks and chaining) once its API is final.
func NewCancelTimer(p *mqclient.Producer) biz.CancelTimer { return &cancelTimer{p: p} }

func (t *cancelTimer) Schedule(ctx context.Context, orderID string, at time.Time) (string, error) {
	body, err := eventv1.Marshal(&eventv1.OrderCancelTimer{OrderId: orderID, DueAt: timestamppb.New(at)})
	if err != nil {
		return "", err
	}
	res, err := t.p.Send(ctx, &mqclient.Message{Topic: eventv1.TopicOrderCancelTimer, Tag: eventv1.TagOrderCancelTimer,
		Keys: []string{orderID}, Body: body, DeliverAt: at})
	if err != nil {
		return "", fmt.Errorf("send cancellation timer of order %s: %w", orderID, err)
	}
	h, err := json.Marshal(timerHandle{MsgID: res.MsgID, Topic: res.Queue.Topic, Broker: res.Queue.BrokerName,
		Queue: res.Queue.QueueID, DeliverAt: at.UnixMilli()})
	if err != nil {
		return "", err
	}
	return string(h), nil
}

func (t *cancelTimer) Recall(ctx context.Context, handle string) error {
	var h timerHandle
	if err := json.Unmarshal([]byte(handle), &h); err != nil {
		return fmt.Errorf("timer handle %q: %w", handle, err)
	}
	return t.p.Recall(ctx, &mqclient.SendResult{MsgID: h.MsgID, DeliverAt: time.UnixMilli(h.DeliverAt),
		Queue: mqclient.Queue{Topic: h.Topic, BrokerName: h.Broker, QueueID: h.Queue}})
}
