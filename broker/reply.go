package broker

import (
	"context"
	"strconv"
	"time"

	"github.com/tidemq/tide/broker/internal/clock"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// handleReply serves SEND_REPLY_MESSAGE(_V2): the reply of a request/reply
// exchange is pushed to the requesting client (property REPLY_TO_CLIENT)
// with PUSH_REPLY_MESSAGE_TO_CLIENT on that client's producer connection,
// and stored in the reply topic when storeReplyMessageEnable is set.
func (b *Broker) handleReply(ctx context.Context, c *remoting.Conn, req *protocol.Command, h *protocol.SendMessageRequestHeader, m *protocol.MessageExt) *protocol.Command {
	m.StoreTimestamp = clock.Now().UnixMilli()
	pushErr := b.pushReply(ctx, h, m)
	if pushErr != nil {
		b.log.Warn("push reply message failed", "client", m.Properties[protocol.PropReplyToClient],
			"correlationId", m.Properties[protocol.PropCorrelationID], "err", pushErr)
	}
	if b.opts.StoreReplyMessageEnable {
		resp := b.putAndRespond(ctx, c, req, []*protocol.MessageExt{m}, nil, m.QueueID)
		if pushErr != nil && resp.Code == protocol.Success {
			resp.Remark = "push reply message failed: " + pushErr.Error()
		}
		return resp
	}
	if pushErr != nil {
		return b.errorResponse(c, req, protocol.SystemError, "push reply message to %s failed: %v", m.Properties[protocol.PropReplyToClient], pushErr)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	rh := protocol.SendMessageResponseHeader{MsgID: protocol.OffsetMsgID(b.storeHost, 0), QueueID: m.QueueID, MsgRegion: b.opts.RegionID, TraceOn: b.opts.TraceOn}
	resp.ExtFields = rh.Encode()
	return resp
}

func (b *Broker) pushReply(ctx context.Context, h *protocol.SendMessageRequestHeader, m *protocol.MessageExt) error {
	clientID := m.Properties[protocol.PropReplyToClient]
	ch, ok := b.clients.FindProducerByClientID(clientID)
	if !ok {
		return errNoReplyClient(clientID)
	}
	conn, ok := ch.(*remoting.Conn)
	if !ok {
		return errNoReplyClient(clientID)
	}
	props := make(map[string]string, len(m.Properties)+1)
	for k, v := range m.Properties {
		props[k] = v
	}
	props[protocol.PropPushReplyTime] = formatMillis(clock.Now())
	rh := protocol.ReplyMessageRequestHeader{
		ProducerGroup: h.ProducerGroup, Topic: m.Topic, DefaultTopic: h.DefaultTopic, DefaultTopicQueueNums: h.DefaultTopicQueueNums,
		QueueID: m.QueueID, SysFlag: m.SysFlag, BornTimestamp: m.BornTimestamp, Flag: m.Flag,
		Properties: protocol.EncodeProperties(props), ReconsumeTimes: m.ReconsumeTimes,
		BornHost: m.BornHost.String(), StoreHost: b.storeHost.String(), StoreTimestamp: m.StoreTimestamp,
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := conn.Invoke(pctx, protocol.NewRequest(protocol.PushReplyMessageToClient, rh.Encode(), m.Body))
	if err != nil {
		return err
	}
	return resp.Err()
}

type errNoReplyClient string

func (e errNoReplyClient) Error() string {
	return "the requesting client " + string(e) + " is not connected to this broker (no producer heartbeat)"
}

func formatMillis(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
