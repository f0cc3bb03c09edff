package protocol

import "encoding/json"

// Connection is one client connection of a group (Java Connection).
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is the response body of GET_CONSUMER_CONNECTION_LIST
// (203): the group's live members and its group-wide subscriptions.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType"`
	MessageModel      string                      `json:"messageModel"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere"`
}

// Encode returns the body as JSON.
func (c *ConsumerConnection) Encode() []byte {
	cp := *c
	if cp.ConnectionSet == nil {
		cp.ConnectionSet = []Connection{}
	}
	if cp.SubscriptionTable == nil {
		cp.SubscriptionTable = map[string]SubscriptionData{}
	}
	return mustMarshal(cp)
}

// DecodeConsumerConnection parses a consumer connection body.
func DecodeConsumerConnection(data []byte) (*ConsumerConnection, error) {
	var c ConsumerConnection
	if err := decodeBody("consumer connection", data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// ProducerConnection is the response body of GET_PRODUCER_CONNECTION_LIST
// (204).
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// Encode returns the body as JSON; an empty set is [] (never null), as
// Java's HashSet serialises.
func (p *ProducerConnection) Encode() []byte {
	cp := *p
	if cp.ConnectionSet == nil {
		cp.ConnectionSet = []Connection{}
	}
	return mustMarshal(cp)
}

// DecodeProducerConnection parses a producer connection body.
func DecodeProducerConnection(data []byte) (*ProducerConnection, error) {
	var p ProducerConnection
	if err := decodeBody("producer connection", data, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// GroupList is a list of group names (QUERY_TOPIC_CONSUME_BY_WHO, 300).
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// Encode returns the body as JSON.
func (g *GroupList) Encode() []byte {
	cp := *g
	if cp.GroupList == nil {
		cp.GroupList = []string{}
	}
	b, _ := json.Marshal(cp)
	return b
}

// DecodeGroupList parses a QUERY_TOPIC_CONSUME_BY_WHO body.
func DecodeGroupList(data []byte) (*GroupList, error) {
	var g GroupList
	if err := decodeBody("group list", data, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// DecodeTopicConfigWrapper parses a GET_ALL_TOPIC_CONFIG body (a broker's
// whole topic table with its version).
func DecodeTopicConfigWrapper(data []byte) (*TopicConfigSerializeWrapper, error) {
	var w TopicConfigSerializeWrapper
	if err := decodeBody("topic config table", data, &w); err != nil {
		return nil, err
	}
	return &w, nil
}
