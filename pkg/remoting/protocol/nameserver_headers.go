package protocol

// Typed ext-field headers of the NameServer request codes. They implement
// Header and follow its decoding rules (ErrMissingField, ErrBadField).

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103).
//
//rmq:codec
type RegisterBrokerRequestHeader struct {
	BrokerName   string `rmq:"brokerName,required"`
	BrokerAddr   string `rmq:"brokerAddr,required"`
	ClusterName  string `rmq:"clusterName,required"`
	HAServerAddr string `rmq:"haServerAddr"`
	BrokerID     int64  `rmq:"brokerId,required"`
	Compressed   bool   `rmq:"compressed"`
	BodyCRC32    int32  `rmq:"bodyCrc32"` // BodyCRC of the body; 0 disables the check
}

// RegisterBrokerResponseHeader is the header of a REGISTER_BROKER response.
// Both fields are set only for a slave whose master is registered.
//
//rmq:codec
type RegisterBrokerResponseHeader struct {
	HAServerAddr string `rmq:"haServerAddr,omitempty"`
	MasterAddr   string `rmq:"masterAddr,omitempty"`
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104).
//
//rmq:codec
type UnregisterBrokerRequestHeader struct {
	BrokerName  string `rmq:"brokerName,required"`
	BrokerAddr  string `rmq:"brokerAddr,required"`
	ClusterName string `rmq:"clusterName,required"`
	BrokerID    int64  `rmq:"brokerId,required"`
}

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105).
//
//rmq:codec
type GetRouteInfoRequestHeader struct {
	Topic string `rmq:"topic,required"`
	// AcceptStandardJSONOnly asks a Java NameServer for quoted map keys. Tide
	// always writes standard JSON, so it changes nothing there.
	AcceptStandardJSONOnly bool `rmq:"acceptStandardJsonOnly,omitempty"`
}

// DeleteTopicInNamesrvRequestHeader is the header of DELETE_TOPIC_IN_NAMESRV
// (216). With ClusterName set only that cluster's brokers lose the topic.
//
//rmq:codec
type DeleteTopicInNamesrvRequestHeader struct {
	Topic       string `rmq:"topic,required"`
	ClusterName string `rmq:"clusterName,omitempty"`
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100).
//
//rmq:codec
type PutKVConfigRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
	Key       string `rmq:"key,required"`
	Value     string `rmq:"value,required"`
}

// KVConfigRequestHeader is the header of GET_KV_CONFIG (101) and
// DELETE_KV_CONFIG (102).
//
//rmq:codec
type KVConfigRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
	Key       string `rmq:"key,required"`
}

// GetKVConfigResponseHeader is the header of a GET_KV_CONFIG response.
//
//rmq:codec
type GetKVConfigResponseHeader struct {
	Value string `rmq:"value"`
}

// GetKVListByNamespaceRequestHeader is the header of GET_KVLIST_BY_NAMESPACE
// (219).
//
//rmq:codec
type GetKVListByNamespaceRequestHeader struct {
	Namespace string `rmq:"namespace,required"`
}

// QueryDataVersionRequestHeader is the header of QUERY_DATA_VERSION (322);
// the body is the broker's DataVersion JSON.
//
//rmq:codec
type QueryDataVersionRequestHeader struct {
	BrokerName  string `rmq:"brokerName,required"`
	BrokerAddr  string `rmq:"brokerAddr,required"`
	ClusterName string `rmq:"clusterName,required"`
	BrokerID    int64  `rmq:"brokerId,required"`
}

// QueryDataVersionResponseHeader is the header of a QUERY_DATA_VERSION
// response: whether the NameServer's stored version differs from the
// broker's. The body is the stored DataVersion (absent if none).
//
//rmq:codec
type QueryDataVersionResponseHeader struct {
	Changed bool `rmq:"changed"`
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER
// (224).
//
//rmq:codec
type GetTopicsByClusterRequestHeader struct {
	Cluster string `rmq:"cluster,required"`
}
