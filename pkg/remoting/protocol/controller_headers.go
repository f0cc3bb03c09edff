package protocol

// Typed ext-field headers of the controller codes (RocketMQ 5's
// header/controller and header/namesrv/BrokerHeartbeatRequestHeader).
// Java's nullable Long broker ids map to NoBrokerID: an id equal to
// NoBrokerID is left out when encoding, and an absent one decodes as
// NoBrokerID. Other optional numbers follow Header's rules (absent = 0).

// putID sets m[k] unless id is NoBrokerID.
func putID(m map[string]string, k string, id int64) {
	if id != NoBrokerID {
		m[k] = itoa64(id)
	}
}

// putStr sets m[k] unless v is empty (Java drops null fields).
func putStr(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// AlterSyncStateSetRequestHeader is the header of
// CONTROLLER_ALTER_SYNC_STATE_SET (1001); the body is a SyncStateSet with
// the new set and the SyncStateSet epoch it was computed from.
//
//rmq:codec
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string `rmq:"brokerName,required"`
	MasterBrokerID int64  `rmq:"masterBrokerId,required"`
	MasterEpoch    int32  `rmq:"masterEpoch,required"`
	InvokeTime     int64  `rmq:"invokeTime"`
}

// AlterSyncStateSetResponseHeader answers CONTROLLER_ALTER_SYNC_STATE_SET.
//
//rmq:codec
type AlterSyncStateSetResponseHeader struct {
	NewSyncStateSetEpoch int32 `rmq:"newSyncStateSetEpoch"`
}

// ElectMasterRequestHeader is the header of CONTROLLER_ELECT_MASTER (1002).
// BrokerID is the broker that asks (broker trigger: it becomes master on a
// group's first election) or the one an operator prefers (DesignateElect);
// NoBrokerID lets the controller choose.
//
//rmq:codec
type ElectMasterRequestHeader struct {
	ClusterName    string `rmq:"clusterName"`
	BrokerName     string `rmq:"brokerName,required"`
	BrokerID       int64  `rmq:"brokerId,default=NoBrokerID"`
	DesignateElect bool   `rmq:"designateElect"`
	InvokeTime     int64  `rmq:"invokeTime"`
}

// MasterInfo is the master part shared by several controller response
// headers. MasterBrokerID is NoBrokerID when the group has no master.
type MasterInfo struct {
	MasterBrokerID    int64  `rmq:"masterBrokerId,nullid"`
	MasterAddress     string `rmq:"masterAddress,omitempty"`
	MasterEpoch       int32  `rmq:"masterEpoch"`
	SyncStateSetEpoch int32  `rmq:"syncStateSetEpoch"`
}

// encodeInto and decodeFrom serve the two headers whose MasterInfo rules
// the generator cannot state: GetReplicaInfoResponseHeader decodes
// syncStateSetEpoch but does not send it, and
// RegisterBrokerToControllerResponseHeader sends the master fields only
// when there is a master.

func (h *MasterInfo) encodeInto(m map[string]string, withSSE bool) {
	putID(m, "masterBrokerId", h.MasterBrokerID)
	putStr(m, "masterAddress", h.MasterAddress)
	m["masterEpoch"] = itoa32(h.MasterEpoch)
	if withSSE {
		m["syncStateSetEpoch"] = itoa32(h.SyncStateSetEpoch)
	}
}

func (h *MasterInfo) decodeFrom(r *extReader) {
	h.MasterBrokerID = r.i64Or("masterBrokerId", NoBrokerID)
	h.MasterAddress = r.str("masterAddress", false)
	h.MasterEpoch = r.i32("masterEpoch", false)
	h.SyncStateSetEpoch = r.i32("syncStateSetEpoch", false)
}

// ElectMasterResponseHeader answers CONTROLLER_ELECT_MASTER; the body is
// an ElectMasterResponseBody.
//
//rmq:codec
type ElectMasterResponseHeader struct{ MasterInfo }

// GetReplicaInfoRequestHeader is the header of CONTROLLER_GET_REPLICA_INFO
// (1004).
//
//rmq:codec
type GetReplicaInfoRequestHeader struct {
	BrokerName string `rmq:"brokerName,required"`
}

// GetReplicaInfoResponseHeader answers CONTROLLER_GET_REPLICA_INFO; the
// body is the group's SyncStateSet. SyncStateSetEpoch is not part of the
// Java header and is not sent. Its codec is hand-written: a field decoded
// but never encoded is no rmq tag rule.
type GetReplicaInfoResponseHeader struct{ MasterInfo }

// Encode returns the ext fields.
func (h *GetReplicaInfoResponseHeader) Encode() map[string]string {
	m := map[string]string{}
	h.encodeInto(m, false)
	return m
}

// Decode reads the ext fields (all optional).
func (h *GetReplicaInfoResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.decodeFrom(&r)
	return r.err
}

// GetMetaDataResponseHeader answers CONTROLLER_GET_METADATA_INFO (1005):
// the controller group, its leader and whether the answering node is it.
// Peers is the comma-separated list of the controller nodes' remoting
// addresses. A node that knows no leader leaves the leader fields empty.
//
//rmq:codec
type GetMetaDataResponseHeader struct {
	Group                   string `rmq:"group,omitempty"`
	ControllerLeaderID      string `rmq:"controllerLeaderId,omitempty"`
	ControllerLeaderAddress string `rmq:"controllerLeaderAddress,omitempty"`
	IsLeader                bool   `rmq:"isLeader"`
	Peers                   string `rmq:"peers,omitempty"`
}

// GetNextBrokerIDRequestHeader is the header of
// CONTROLLER_GET_NEXT_BROKER_ID (1012).
//
//rmq:codec
type GetNextBrokerIDRequestHeader struct {
	ClusterName string `rmq:"clusterName"`
	BrokerName  string `rmq:"brokerName,required"`
}

// GetNextBrokerIDResponseHeader answers CONTROLLER_GET_NEXT_BROKER_ID.
//
//rmq:codec
type GetNextBrokerIDResponseHeader struct {
	ClusterName  string `rmq:"clusterName"`
	BrokerName   string `rmq:"brokerName"`
	NextBrokerID int64  `rmq:"nextBrokerId,nullid"`
}

// ApplyBrokerIDRequestHeader is the header of CONTROLLER_APPLY_BROKER_ID
// (1013). RegisterCheckCode is "brokerAddress;timestamp": the address part
// becomes the broker's address, the whole code proves that a later apply
// for the same id comes from the same broker.
//
//rmq:codec
type ApplyBrokerIDRequestHeader struct {
	ClusterName       string `rmq:"clusterName,required"`
	BrokerName        string `rmq:"brokerName,required"`
	AppliedBrokerID   int64  `rmq:"appliedBrokerId,required"`
	RegisterCheckCode string `rmq:"registerCheckCode,required"`
}

// ApplyBrokerIDResponseHeader answers CONTROLLER_APPLY_BROKER_ID.
//
//rmq:codec
type ApplyBrokerIDResponseHeader struct {
	ClusterName string `rmq:"clusterName"`
	BrokerName  string `rmq:"brokerName"`
}

// RegisterBrokerToControllerRequestHeader is the header of
// CONTROLLER_REGISTER_BROKER (1003): a broker that holds an applied id
// reports its (possibly new) address and learns the group's master.
//
//rmq:codec
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName   string `rmq:"clusterName"`
	BrokerName    string `rmq:"brokerName,required"`
	BrokerID      int64  `rmq:"brokerId,required"`
	BrokerAddress string `rmq:"brokerAddress,required"`
	InvokeTime    int64  `rmq:"invokeTime"`
}

// RegisterBrokerToControllerResponseHeader answers
// CONTROLLER_REGISTER_BROKER; the master fields are set only when the
// group has an alive master. The body is the group's SyncStateSet. Its
// codec is hand-written: whether the master fields are written depends on
// MasterBrokerID, a condition across fields that no rmq tag states.
type RegisterBrokerToControllerResponseHeader struct {
	ClusterName string
	BrokerName  string
	MasterInfo
}

// Encode returns the ext fields.
func (h *RegisterBrokerToControllerResponseHeader) Encode() map[string]string {
	m := map[string]string{}
	putStr(m, "clusterName", h.ClusterName)
	putStr(m, "brokerName", h.BrokerName)
	if h.MasterBrokerID != NoBrokerID {
		h.encodeInto(m, true)
	}
	return m
}

// Decode reads the ext fields (all optional).
func (h *RegisterBrokerToControllerResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", false)
	h.BrokerName = r.str("brokerName", false)
	h.decodeFrom(&r)
	return r.err
}

// BrokerHeartbeatRequestHeader is the header of BROKER_HEARTBEAT (904)
// that a broker in controller mode sends to every controller node. Epoch,
// MaxOffset and ConfirmOffset rank the candidates of an election;
// HeartbeatTimeoutMillis (Java's heartbeatTimeoutMills) overrides the
// controller's timeout for this broker when positive.
//
//rmq:codec
type BrokerHeartbeatRequestHeader struct {
	ClusterName            string `rmq:"clusterName,required"`
	BrokerAddr             string `rmq:"brokerAddr,required"`
	BrokerName             string `rmq:"brokerName,required"`
	BrokerID               int64  `rmq:"brokerId,nullid"`
	Epoch                  int32  `rmq:"epoch"`
	MaxOffset              int64  `rmq:"maxOffset"`
	ConfirmOffset          int64  `rmq:"confirmOffset"`
	HeartbeatTimeoutMillis int64  `rmq:"heartbeatTimeoutMills,positive"`
	ElectionPriority       int32  `rmq:"electionPriority"`
}

// NotifyBrokerRoleChangedRequestHeader is the header of
// NOTIFY_BROKER_ROLE_CHANGED (1008), which the controller leader sends to
// every broker of a group after an election; the body is the group's
// SyncStateSet.
//
//rmq:codec
type NotifyBrokerRoleChangedRequestHeader struct{ MasterInfo }
