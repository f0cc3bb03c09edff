package protocol

import "sort"

// JSON bodies of the controller codes (RocketMQ 5's body/SyncStateSet,
// ElectMasterResponseBody, BrokerMemberGroup, BrokerReplicasInfo,
// EpochEntryCache). Java's Set<Long> is a JSON array; Tide writes it
// sorted. Java's fastjson writes Map<Long,String> keys unquoted
// ({1:"addr"}); Tide writes standard JSON with quoted keys, which fastjson
// reads too, and reads only standard JSON.

// SyncStateSet is the set of broker ids in sync with the master and the
// epoch of that set: the body of CONTROLLER_ALTER_SYNC_STATE_SET (request
// and response), CONTROLLER_REGISTER_BROKER, CONTROLLER_GET_REPLICA_INFO
// and NOTIFY_BROKER_ROLE_CHANGED responses.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// Encode returns the JSON body, ids sorted.
func (s *SyncStateSet) Encode() []byte {
	c := *s
	c.SyncStateSet = sortedIDs(s.SyncStateSet)
	return mustMarshal(&c)
}

// DecodeSyncStateSet parses a SyncStateSet body.
func DecodeSyncStateSet(data []byte) (*SyncStateSet, error) {
	var s SyncStateSet
	if err := decodeBody("SyncStateSet", data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// BrokerMemberGroup is the members of one broker group: id → address.
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// ElectMasterResponseBody is the body of a CONTROLLER_ELECT_MASTER
// response: the group's members and the new SyncStateSet.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup,omitempty"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// Encode returns the JSON body, ids sorted.
func (b *ElectMasterResponseBody) Encode() []byte {
	c := *b
	c.SyncStateSet = sortedIDs(b.SyncStateSet)
	return mustMarshal(&c)
}

// DecodeElectMasterResponseBody parses an ElectMasterResponseBody.
func DecodeElectMasterResponseBody(data []byte) (*ElectMasterResponseBody, error) {
	var b ElectMasterResponseBody
	if err := decodeBody("ElectMasterResponseBody", data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// ReplicaIdentity is one replica of a group as CONTROLLER_GET_SYNC_STATE_DATA
// reports it.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is one group's master, epochs and replicas split by
// membership of the SyncStateSet. MasterBrokerID is NoBrokerID without a
// master.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo is the body of a CONTROLLER_GET_SYNC_STATE_DATA
// response (whose request body is a JSON array of broker names).
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// Encode returns the JSON body.
func (b *BrokerReplicasInfo) Encode() []byte { return mustMarshal(b) }

// DecodeBrokerReplicasInfo parses a BrokerReplicasInfo body.
func DecodeBrokerReplicasInfo(data []byte) (*BrokerReplicasInfo, error) {
	var b BrokerReplicasInfo
	if err := decodeBody("BrokerReplicasInfo", data, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// EncodeBrokerNames returns the body of a CONTROLLER_GET_SYNC_STATE_DATA
// request.
func EncodeBrokerNames(names []string) []byte {
	if names == nil {
		names = []string{}
	}
	return mustMarshal(names)
}

// DecodeBrokerNames parses the body of a CONTROLLER_GET_SYNC_STATE_DATA
// request.
func DecodeBrokerNames(data []byte) ([]string, error) {
	var names []string
	if err := decodeBody("broker names", data, &names); err != nil {
		return nil, err
	}
	return names, nil
}

// EpochEntry is one epoch of a broker's commit log: the epoch and the
// offset range written under it (EndOffset is math.MaxInt64 for the
// current one, as Java's Long.MAX_VALUE).
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EpochEntryCache is the body of a GET_BROKER_EPOCH_CACHE response: a
// broker's epoch entries and its max commit log offset.
type EpochEntryCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// Encode returns the JSON body.
func (c *EpochEntryCache) Encode() []byte { return mustMarshal(c) }

// DecodeEpochEntryCache parses an EpochEntryCache body.
func DecodeEpochEntryCache(data []byte) (*EpochEntryCache, error) {
	var c EpochEntryCache
	if err := decodeBody("EpochEntryCache", data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func sortedIDs(ids []int64) []int64 {
	out := append([]int64{}, ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
