package clustertest

import (
	"context"
	"fmt"
	"time"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// PullAll reads every message of topic's queues from addr with raw
// PULL_MESSAGE requests carrying their own subscription ("*"), from
// offset 0, as a fresh consumer would.
func PullAll(cl *remoting.Client, addr, group, topic string, queues int32) ([]*protocol.MessageExt, error) {
	var out []*protocol.MessageExt
	for q := int32(0); q < queues; q++ {
		for off := int64(0); ; {
			h := protocol.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: q, QueueOffset: off,
				MaxMsgNums: 32, SysFlag: protocol.PullSubscription, Subscription: "*", ExpressionType: "TAG"}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, h.Encode(), nil))
			cancel()
			if err != nil {
				return out, err
			}
			if resp.Code == protocol.PullNotFound {
				break
			}
			if resp.Code != protocol.Success {
				return out, fmt.Errorf("pull %s/%d@%d from %s: code %d %s", topic, q, off, addr, resp.Code, resp.Remark)
			}
			msgs, err := protocol.DecodeMessages(resp.Body)
			if err != nil {
				return out, err
			}
			out = append(out, msgs...)
			var rh protocol.PullMessageResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil {
				return out, err
			}
			if rh.NextBeginOffset <= off {
				return out, fmt.Errorf("pull %s/%d: nextBeginOffset %d did not advance from %d", topic, q, rh.NextBeginOffset, off)
			}
			off = rh.NextBeginOffset
		}
	}
	return out, nil
}
