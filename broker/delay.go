package broker

import (
	"strconv"

	"github.com/tidemq/tide/broker/internal/topic"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// divertDelayed parks a message with a DELAY level in SCHEDULE_TOPIC_XXXX
// (queue level-1), keeping its real topic and queue in properties, as
// RocketMQ does. Half and rollback transaction records are never delayed.
// TODO(schedule): replaced by schedule.Divert once the level service lands.
func (b *Broker) divertDelayed(m *protocol.MessageExt) {
	tx := protocol.TxType(m.SysFlag)
	if tx == protocol.SysFlagTxPrepared || tx == protocol.SysFlagTxRollback {
		return
	}
	level, err := strconv.Atoi(m.Properties[protocol.PropDelayLevel])
	if err != nil || level <= 0 {
		return
	}
	if level > b.delayLevels {
		level = b.delayLevels
		m.Properties[protocol.PropDelayLevel] = strconv.Itoa(level)
	}
	m.Properties[protocol.PropRealTopic] = m.Topic
	m.Properties[protocol.PropRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic, m.QueueID = topic.Schedule, int32(level-1)
}
