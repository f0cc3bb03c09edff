package protocol

import (
	"strconv"
)

// Typed ext-field headers of the NameServer request codes. They implement
// Header and follow its decoding rules (ErrMissingField, ErrBadField).

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103).
type RegisterBrokerRequestHeader struct {
	BrokerName   string
	BrokerAddr   string
	ClusterName  string
	HAServerAddr string
	BrokerID     int64
	Compressed   bool
	BodyCRC32    int32 // BodyCRC of the body; 0 disables the check
}

// Encode returns the ext fields.
func (h *RegisterBrokerRequestHeader) Encode() map[string]string {
	return map[string]string{
		"brokerName":   h.BrokerName,
		"brokerAddr":   h.BrokerAddr,
		"clusterName":  h.ClusterName,
		"haServerAddr": h.HAServerAddr,
		"brokerId":     strconv.FormatInt(h.BrokerID, 10),
		"compressed":   strconv.FormatBool(h.Compressed),
		"bodyCrc32":    strconv.FormatInt(int64(h.BodyCRC32), 10),
	}
}

// Decode reads the ext fields. brokerName, brokerAddr, clusterName and
// brokerId are required; haServerAddr, compressed and bodyCrc32 default to
// "", false and 0.
func (h *RegisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.BrokerName = r.str("brokerName", true)
	h.BrokerAddr = r.str("brokerAddr", true)
	h.ClusterName = r.str("clusterName", true)
	h.HAServerAddr = r.str("haServerAddr", false)
	h.BrokerID = r.i64("brokerId", true)
	h.Compressed = r.bool("compressed", false)
	h.BodyCRC32 = r.i32("bodyCrc32", false)
	return r.err
}

// RegisterBrokerResponseHeader is the header of a REGISTER_BROKER response.
// Both fields are set only for a slave whose master is registered.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string
	MasterAddr   string
}

// Encode returns the ext fields; empty fields are left out, as Java drops
// nulls.
func (h *RegisterBrokerResponseHeader) Encode() map[string]string {
	m := map[string]string{}
	if h.HAServerAddr != "" {
		m["haServerAddr"] = h.HAServerAddr
	}
	if h.MasterAddr != "" {
		m["masterAddr"] = h.MasterAddr
	}
	return m
}

// Decode reads the ext fields (all optional).
func (h *RegisterBrokerResponseHeader) Decode(ext map[string]string) error {
	h.HAServerAddr = ext["haServerAddr"]
	h.MasterAddr = ext["masterAddr"]
	return nil
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104).
type UnregisterBrokerRequestHeader struct {
	BrokerName  string
	BrokerAddr  string
	ClusterName string
	BrokerID    int64
}

// Encode returns the ext fields.
func (h *UnregisterBrokerRequestHeader) Encode() map[string]string {
	return map[string]string{
		"brokerName":  h.BrokerName,
		"brokerAddr":  h.BrokerAddr,
		"clusterName": h.ClusterName,
		"brokerId":    strconv.FormatInt(h.BrokerID, 10),
	}
}

// Decode reads the ext fields; all are required.
func (h *UnregisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.BrokerName = r.str("brokerName", true)
	h.BrokerAddr = r.str("brokerAddr", true)
	h.ClusterName = r.str("clusterName", true)
	h.BrokerID = r.i64("brokerId", true)
	return r.err
}

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105).
type GetRouteInfoRequestHeader struct {
	Topic string
	// AcceptStandardJSONOnly asks a Java NameServer for quoted map keys. Tide
	// always writes standard JSON, so it changes nothing there.
	AcceptStandardJSONOnly bool
}

// Encode returns the ext fields (acceptStandardJsonOnly only when set).
func (h *GetRouteInfoRequestHeader) Encode() map[string]string {
	m := map[string]string{"topic": h.Topic}
	if h.AcceptStandardJSONOnly {
		m["acceptStandardJsonOnly"] = "true"
	}
	return m
}

// Decode reads the ext fields; topic is required.
func (h *GetRouteInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Topic = r.str("topic", true)
	h.AcceptStandardJSONOnly = r.bool("acceptStandardJsonOnly", false)
	return r.err
}

// DeleteTopicInNamesrvRequestHeader is the header of DELETE_TOPIC_IN_NAMESRV
// (216). With ClusterName set only that cluster's brokers lose the topic.
type DeleteTopicInNamesrvRequestHeader struct {
	Topic       string
	ClusterName string
}

// Encode returns the ext fields (clusterName only when set).
func (h *DeleteTopicInNamesrvRequestHeader) Encode() map[string]string {
	m := map[string]string{"topic": h.Topic}
	if h.ClusterName != "" {
		m["clusterName"] = h.ClusterName
	}
	return m
}

// Decode reads the ext fields; topic is required.
func (h *DeleteTopicInNamesrvRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Topic = r.str("topic", true)
	h.ClusterName = r.str("clusterName", false)
	return r.err
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100).
type PutKVConfigRequestHeader struct {
	Namespace string
	Key       string
	Value     string
}

// Encode returns the ext fields.
func (h *PutKVConfigRequestHeader) Encode() map[string]string {
	return map[string]string{"namespace": h.Namespace, "key": h.Key, "value": h.Value}
}

// Decode reads the ext fields; namespace, key and value are required.
func (h *PutKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Namespace = r.str("namespace", true)
	h.Key = r.str("key", true)
	h.Value = r.str("value", true)
	return r.err
}

// KVConfigRequestHeader is the header of GET_KV_CONFIG (101) and
// DELETE_KV_CONFIG (102).
type KVConfigRequestHeader struct {
	Namespace string
	Key       string
}

// Encode returns the ext fields.
func (h *KVConfigRequestHeader) Encode() map[string]string {
	return map[string]string{"namespace": h.Namespace, "key": h.Key}
}

// Decode reads the ext fields; both are required.
func (h *KVConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Namespace = r.str("namespace", true)
	h.Key = r.str("key", true)
	return r.err
}

// GetKVConfigResponseHeader is the header of a GET_KV_CONFIG response.
type GetKVConfigResponseHeader struct {
	Value string
}

// Encode returns the ext fields.
func (h *GetKVConfigResponseHeader) Encode() map[string]string {
	return map[string]string{"value": h.Value}
}

// Decode reads the ext fields (value is nullable in Java).
func (h *GetKVConfigResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Value = r.str("value", false)
	return r.err
}

// GetKVListByNamespaceRequestHeader is the header of GET_KVLIST_BY_NAMESPACE
// (219).
type GetKVListByNamespaceRequestHeader struct {
	Namespace string
}

// Encode returns the ext fields.
func (h *GetKVListByNamespaceRequestHeader) Encode() map[string]string {
	return map[string]string{"namespace": h.Namespace}
}

// Decode reads the ext fields; namespace is required.
func (h *GetKVListByNamespaceRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Namespace = r.str("namespace", true)
	return r.err
}

// QueryDataVersionRequestHeader is the header of QUERY_DATA_VERSION (322);
// the body is the broker's DataVersion JSON.
type QueryDataVersionRequestHeader struct {
	BrokerName  string
	BrokerAddr  string
	ClusterName string
	BrokerID    int64
}

// Encode returns the ext fields.
func (h *QueryDataVersionRequestHeader) Encode() map[string]string {
	return map[string]string{
		"brokerName":  h.BrokerName,
		"brokerAddr":  h.BrokerAddr,
		"clusterName": h.ClusterName,
		"brokerId":    strconv.FormatInt(h.BrokerID, 10),
	}
}

// Decode reads the ext fields; all are required.
func (h *QueryDataVersionRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.BrokerName = r.str("brokerName", true)
	h.BrokerAddr = r.str("brokerAddr", true)
	h.ClusterName = r.str("clusterName", true)
	h.BrokerID = r.i64("brokerId", true)
	return r.err
}

// QueryDataVersionResponseHeader is the header of a QUERY_DATA_VERSION
// response: whether the NameServer's stored version differs from the
// broker's. The body is the stored DataVersion (absent if none).
type QueryDataVersionResponseHeader struct {
	Changed bool
}

// Encode returns the ext fields.
func (h *QueryDataVersionResponseHeader) Encode() map[string]string {
	return map[string]string{"changed": strconv.FormatBool(h.Changed)}
}

// Decode reads the ext fields; changed defaults to false.
func (h *QueryDataVersionResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Changed = r.bool("changed", false)
	return r.err
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER
// (224).
type GetTopicsByClusterRequestHeader struct {
	Cluster string
}

// Encode returns the ext fields.
func (h *GetTopicsByClusterRequestHeader) Encode() map[string]string {
	return map[string]string{"cluster": h.Cluster}
}

// Decode reads the ext fields; cluster is required.
func (h *GetTopicsByClusterRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Cluster = r.str("cluster", true)
	return r.err
}
