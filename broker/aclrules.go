package broker

import (
	"fmt"

	"github.com/tidemq/tide/broker/internal/acl"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// accessRule is how aclEnable authorises one request code. Exactly one of
// admin, resources, resolved or open says what the code needs; resources
// and resolved may go together (checked before the handler, then again
// after its lookup). docs/security.md lists every rule.
type accessRule struct {
	// admin: the code needs an admin account.
	admin bool
	// resources derives the topics and groups the request touches from
	// the typed header or body its handler decodes (the same decoder on
	// the same fields), so the check and the handler cannot disagree
	// about which field names the topic. It may also ask for admin
	// (a recall without a topic).
	resources func(req *protocol.Command) (res []acl.Resource, admin bool, err error)
	// resolved says what the handler checks itself (Broker.authorize)
	// once it has looked up what the request names: a stored record's
	// real topic and group, the half messages it lists.
	resolved string
	// open says why the code needs nothing beyond a valid signature.
	open string
}

// aclRules maps every request code the broker serves to its rule. A code
// without a rule is refused when aclEnable is set (checkACL), and
// TestEveryCodeHasAnAccessRule fails for a registered code missing here.
var aclRules = map[int16]accessRule{
	protocol.SendMessage:        {resources: sendResources},
	protocol.SendMessageV2:      {resources: sendResources},
	protocol.SendBatchMessage:   {resources: sendResources},
	protocol.SendReplyMessage:   {resources: sendResources},
	protocol.SendReplyMessageV2: {resources: sendResources},
	protocol.PullMessage: {resources: header(func(h *protocol.PullMessageRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Topic(h.Topic, acl.Sub), acl.Group(h.ConsumerGroup, acl.Sub)}
	})},
	protocol.HeartBeat: {resources: heartbeatResources,
		resolved: "a producer group carries no permission of its own: CHECK_TRANSACTION_STATE goes only to a producer connection whose account has PUB on the half message's topic (sendCheck)"},
	protocol.UnregisterClient: {resources: header(func(h *protocol.UnregisterClientRequestHeader) []acl.Resource {
		if h.ConsumerGroup == "" {
			return nil // only the caller's own producer registration goes
		}
		return []acl.Resource{acl.Group(h.ConsumerGroup, acl.Sub)}
	})},
	protocol.GetConsumerListByGroup:    {resources: groupHeader},
	protocol.GetConsumerConnectionList: {resources: groupHeader},
	// A producer group carries no permission of its own (see HeartBeat), so
	// the client ids and addresses of its members are an operator's view.
	protocol.GetProducerConnectionList: {admin: true},
	protocol.QueryConsumerOffset: {resources: header(func(h *protocol.QueryConsumerOffsetRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Group(h.ConsumerGroup, acl.Sub), acl.Topic(h.Topic, acl.Sub)}
	})},
	protocol.UpdateConsumerOffset: {resources: header(func(h *protocol.UpdateConsumerOffsetRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Group(h.ConsumerGroup, acl.Sub), acl.Topic(h.Topic, acl.Sub)}
	})},
	protocol.GetMaxOffset:            {resources: queueHeader},
	protocol.GetMinOffset:            {resources: queueHeader},
	protocol.GetEarliestMsgStoreTime: {resources: queueHeader},
	protocol.SearchOffsetByTimestamp: {resources: header(func(h *protocol.SearchOffsetRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Topic(h.Topic, acl.Any)}
	})},
	protocol.LockBatchMQ:   {resources: lockResources},
	protocol.UnlockBatchMQ: {resources: lockResources},
	protocol.QueryMessage: {resources: header(func(h *protocol.QueryMessageRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Topic(h.Topic, acl.Sub)}
	})},
	protocol.ViewMessageByID: {resolved: "SUB on the stored record's real topic (handleViewMessage)"},
	protocol.ConsumerSendMsgBack: {resources: header(func(h *protocol.ConsumerSendMsgBackRequestHeader) []acl.Resource {
		return []acl.Resource{acl.Group(h.Group, acl.Sub), acl.Topic(h.OriginTopic, acl.Pub)}
	}), resolved: "the record at offset must be in originTopic or the group's retry topic, and SUB on it (handleSendBack)"},
	protocol.EndTransaction: {resolved: "PUB on the half message's real topic, and the request's producerGroup must be the half message's (handleEndTransaction)"},
	protocol.GetTopicStatsInfo: {resources: header(func(h *protocol.TopicHeader) []acl.Resource {
		return []acl.Resource{acl.Topic(h.Topic, acl.Any)}
	})},
	protocol.QueryTopicConsumeByWho: {resources: header(func(h *protocol.TopicHeader) []acl.Resource {
		return []acl.Resource{acl.Topic(h.Topic, acl.Sub)}
	})},
	protocol.GetConsumeStats: {resources: header(func(h *protocol.GetConsumeStatsRequestHeader) []acl.Resource {
		res := []acl.Resource{acl.Group(h.ConsumerGroup, acl.Sub)}
		if h.Topic != "" {
			res = append(res, acl.Topic(h.Topic, acl.Sub))
		}
		return res
	})},

	protocol.UpdateAndCreateTopic:          {admin: true},
	protocol.DeleteTopicInBroker:           {admin: true},
	protocol.UpdateAndCreateSubscription:   {admin: true},
	protocol.GetAllTopicConfig:             {admin: true},
	protocol.GetAllSubscriptionGroupConfig: {admin: true},
	protocol.TideResumeHalfCheck:           {admin: true},
	protocol.TideForceEndTransaction:       {admin: true},
	protocol.TideGetMetadata:               {admin: true},
	protocol.TideHAStatus:                  {admin: true},
	protocol.NotifyBrokerRoleChanged:       {admin: true},
	protocol.GetBrokerEpochCache:           {admin: true},
	protocol.UpdateAndCreateACLConfig:      {admin: true},
	protocol.GetBrokerClusterACLInfo:       {admin: true},
	protocol.DeleteACLConfig:               {admin: true},
	protocol.UpdateGlobalWhiteAddrsConfig:  {admin: true},
	protocol.TideListHalfMessages:          {resolved: "lists only half messages of topics the account has PUB on (an admin sees all; handleListHalf)"},
	protocol.TideRecallTimer: {resources: func(req *protocol.Command) ([]acl.Resource, bool, error) {
		r := decodeRecall(req)
		if r.Topic == "" {
			return nil, true, nil // a recall in any topic
		}
		return []acl.Resource{acl.Topic(r.Topic, acl.Pub)}, false, nil
	}},

	// a fresh producer id reveals nothing; a stable one fences the
	// group's instance, so it takes PUB on the producer group
	protocol.TideInitProducerID: {resources: header(func(h *protocol.InitProducerIDRequestHeader) []acl.Resource {
		if h.InstanceName == "" {
			return nil
		}
		return []acl.Resource{acl.Group(h.ProducerGroup, acl.Pub)}
	})},

	protocol.GetBrokerRuntimeInfo: {open: "broker-wide totals (offsets, counts, disk), no topic, group or message data"},
}

// header adapts a resource function of a typed header: the request's ext
// fields decoded into H exactly as the handler decodes them (the header
// DecodeFrame typed, for a pull, or Decode of the fields).
func header[H any, P interface {
	*H
	protocol.Header
}](f func(*H) []acl.Resource) func(*protocol.Command) ([]acl.Resource, bool, error) {
	return func(req *protocol.Command) ([]acl.Resource, bool, error) {
		h, err := protocol.DecodeRequestHeader[H, P](req)
		if err != nil {
			return nil, false, err
		}
		return f(h), false, nil
	}
}

var groupHeader = header(func(h *protocol.ConsumerGroupHeader) []acl.Resource {
	return []acl.Resource{acl.Group(h.ConsumerGroup, acl.Sub)}
})

// queueHeader: offsets and store times of a queue need PUB or SUB on its
// topic (RocketMQ 4.x lets any account read them).
var queueHeader = header(func(h *protocol.QueueRequestHeader) []acl.Resource {
	return []acl.Resource{acl.Topic(h.Topic, acl.Any)}
})

// sendResources: PUB on the topic the handler stores into (a retry topic:
// SUB on its group), read from the header form of the request's code.
func sendResources(req *protocol.Command) ([]acl.Resource, bool, error) {
	h, err := decodeSend(req)
	if err != nil {
		return nil, false, err
	}
	return []acl.Resource{acl.Topic(h.Topic, acl.Pub)}, false, nil
}

func heartbeatResources(req *protocol.Command) ([]acl.Resource, bool, error) {
	hb, err := protocol.DecodeHeartbeatData(req.Body)
	if err != nil {
		return nil, false, fmt.Errorf("heartbeat body: %w", err)
	}
	var res []acl.Resource
	for _, cd := range hb.ConsumerDataSet {
		res = append(res, acl.Group(cd.GroupName, acl.Sub))
		for _, s := range cd.SubscriptionDataSet {
			res = append(res, acl.Topic(s.Topic, acl.Sub))
		}
	}
	return res, false, nil
}

// lockResources: SUB on the group and on every topic of the queues.
func lockResources(req *protocol.Command) ([]acl.Resource, bool, error) {
	body, err := protocol.DecodeLockBatchRequestBody(req.Body)
	if err != nil {
		return nil, false, fmt.Errorf("lock body: %w", err)
	}
	res := []acl.Resource{acl.Group(body.ConsumerGroup, acl.Sub)}
	for _, q := range body.MQSet {
		res = append(res, acl.Topic(q.Topic, acl.Sub))
	}
	return res, false, nil
}
