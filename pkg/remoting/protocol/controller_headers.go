package protocol

// Typed ext-field headers of the controller codes (RocketMQ 5's
// header/controller and header/namesrv/BrokerHeartbeatRequestHeader).
// Java's nullable Long broker ids map to NoBrokerID: an id equal to
// NoBrokerID is left out when encoding, and an absent one decodes as
// NoBrokerID. Other optional numbers follow Header's rules (absent = 0).

// i64Or is i64 for an optional field whose absence means def.
func (r *extReader) i64Or(name string, def int64) int64 {
	if r.ext[name] == "" {
		return def
	}
	return r.i64(name, false)
}

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
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string
	MasterBrokerID int64
	MasterEpoch    int32
	InvokeTime     int64
}

// Encode returns the ext fields.
func (h *AlterSyncStateSetRequestHeader) Encode() map[string]string {
	return map[string]string{"brokerName": h.BrokerName, "masterBrokerId": itoa64(h.MasterBrokerID),
		"masterEpoch": itoa32(h.MasterEpoch), "invokeTime": itoa64(h.InvokeTime)}
}

// Decode reads the ext fields; brokerName, masterBrokerId and masterEpoch
// are required.
func (h *AlterSyncStateSetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.BrokerName = r.str("brokerName", true)
	h.MasterBrokerID = r.i64("masterBrokerId", true)
	h.MasterEpoch = r.i32("masterEpoch", true)
	h.InvokeTime = r.i64("invokeTime", false)
	return r.err
}

// AlterSyncStateSetResponseHeader answers CONTROLLER_ALTER_SYNC_STATE_SET.
type AlterSyncStateSetResponseHeader struct {
	NewSyncStateSetEpoch int32
}

// Encode returns the ext fields.
func (h *AlterSyncStateSetResponseHeader) Encode() map[string]string {
	return map[string]string{"newSyncStateSetEpoch": itoa32(h.NewSyncStateSetEpoch)}
}

// Decode reads the ext fields.
func (h *AlterSyncStateSetResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.NewSyncStateSetEpoch = r.i32("newSyncStateSetEpoch", false)
	return r.err
}

// ElectMasterRequestHeader is the header of CONTROLLER_ELECT_MASTER (1002).
// BrokerID is the broker that asks (broker trigger: it becomes master on a
// group's first election) or the one an operator prefers (DesignateElect);
// NoBrokerID lets the controller choose.
type ElectMasterRequestHeader struct {
	ClusterName    string
	BrokerName     string
	BrokerID       int64
	DesignateElect bool
	InvokeTime     int64
}

// Encode returns the ext fields.
func (h *ElectMasterRequestHeader) Encode() map[string]string {
	return map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName,
		"brokerId": itoa64(h.BrokerID), "designateElect": btoa(h.DesignateElect),
		"invokeTime": itoa64(h.InvokeTime)}
}

// Decode reads the ext fields; brokerName is required, brokerId defaults
// to NoBrokerID and clusterName to "".
func (h *ElectMasterRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", false)
	h.BrokerName = r.str("brokerName", true)
	h.BrokerID = r.i64Or("brokerId", NoBrokerID)
	h.DesignateElect = r.bool("designateElect", false)
	h.InvokeTime = r.i64("invokeTime", false)
	return r.err
}

// MasterInfo is the master part shared by several controller response
// headers. MasterBrokerID is NoBrokerID when the group has no master.
type MasterInfo struct {
	MasterBrokerID    int64
	MasterAddress     string
	MasterEpoch       int32
	SyncStateSetEpoch int32
}

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
type ElectMasterResponseHeader struct{ MasterInfo }

// Encode returns the ext fields.
func (h *ElectMasterResponseHeader) Encode() map[string]string {
	m := map[string]string{}
	h.encodeInto(m, true)
	return m
}

// Decode reads the ext fields (all optional).
func (h *ElectMasterResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.decodeFrom(&r)
	return r.err
}

// GetReplicaInfoRequestHeader is the header of CONTROLLER_GET_REPLICA_INFO
// (1004).
type GetReplicaInfoRequestHeader struct {
	BrokerName string
}

// Encode returns the ext fields.
func (h *GetReplicaInfoRequestHeader) Encode() map[string]string {
	return map[string]string{"brokerName": h.BrokerName}
}

// Decode reads the ext fields; brokerName is required.
func (h *GetReplicaInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.BrokerName = r.str("brokerName", true)
	return r.err
}

// GetReplicaInfoResponseHeader answers CONTROLLER_GET_REPLICA_INFO; the
// body is the group's SyncStateSet. SyncStateSetEpoch is not part of the
// Java header and is not sent.
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
type GetMetaDataResponseHeader struct {
	Group                   string
	ControllerLeaderID      string
	ControllerLeaderAddress string
	IsLeader                bool
	Peers                   string
}

// Encode returns the ext fields.
func (h *GetMetaDataResponseHeader) Encode() map[string]string {
	m := map[string]string{"isLeader": btoa(h.IsLeader)}
	putStr(m, "group", h.Group)
	putStr(m, "controllerLeaderId", h.ControllerLeaderID)
	putStr(m, "controllerLeaderAddress", h.ControllerLeaderAddress)
	putStr(m, "peers", h.Peers)
	return m
}

// Decode reads the ext fields (all optional).
func (h *GetMetaDataResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.Group = r.str("group", false)
	h.ControllerLeaderID = r.str("controllerLeaderId", false)
	h.ControllerLeaderAddress = r.str("controllerLeaderAddress", false)
	h.IsLeader = r.bool("isLeader", false)
	h.Peers = r.str("peers", false)
	return r.err
}

// GetNextBrokerIDRequestHeader is the header of
// CONTROLLER_GET_NEXT_BROKER_ID (1012).
type GetNextBrokerIDRequestHeader struct {
	ClusterName string
	BrokerName  string
}

// Encode returns the ext fields.
func (h *GetNextBrokerIDRequestHeader) Encode() map[string]string {
	return map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName}
}

// Decode reads the ext fields; brokerName is required.
func (h *GetNextBrokerIDRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", false)
	h.BrokerName = r.str("brokerName", true)
	return r.err
}

// GetNextBrokerIDResponseHeader answers CONTROLLER_GET_NEXT_BROKER_ID.
type GetNextBrokerIDResponseHeader struct {
	ClusterName  string
	BrokerName   string
	NextBrokerID int64
}

// Encode returns the ext fields.
func (h *GetNextBrokerIDResponseHeader) Encode() map[string]string {
	m := map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName}
	putID(m, "nextBrokerId", h.NextBrokerID)
	return m
}

// Decode reads the ext fields.
func (h *GetNextBrokerIDResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", false)
	h.BrokerName = r.str("brokerName", false)
	h.NextBrokerID = r.i64Or("nextBrokerId", NoBrokerID)
	return r.err
}

// ApplyBrokerIDRequestHeader is the header of CONTROLLER_APPLY_BROKER_ID
// (1013). RegisterCheckCode is "brokerAddress;timestamp": the address part
// becomes the broker's address, the whole code proves that a later apply
// for the same id comes from the same broker.
type ApplyBrokerIDRequestHeader struct {
	ClusterName       string
	BrokerName        string
	AppliedBrokerID   int64
	RegisterCheckCode string
}

// Encode returns the ext fields.
func (h *ApplyBrokerIDRequestHeader) Encode() map[string]string {
	return map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName,
		"appliedBrokerId": itoa64(h.AppliedBrokerID), "registerCheckCode": h.RegisterCheckCode}
}

// Decode reads the ext fields; all are required.
func (h *ApplyBrokerIDRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", true)
	h.BrokerName = r.str("brokerName", true)
	h.AppliedBrokerID = r.i64("appliedBrokerId", true)
	h.RegisterCheckCode = r.str("registerCheckCode", true)
	return r.err
}

// ApplyBrokerIDResponseHeader answers CONTROLLER_APPLY_BROKER_ID.
type ApplyBrokerIDResponseHeader struct {
	ClusterName string
	BrokerName  string
}

// Encode returns the ext fields.
func (h *ApplyBrokerIDResponseHeader) Encode() map[string]string {
	return map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName}
}

// Decode reads the ext fields.
func (h *ApplyBrokerIDResponseHeader) Decode(ext map[string]string) error {
	h.ClusterName = ext["clusterName"]
	h.BrokerName = ext["brokerName"]
	return nil
}

// RegisterBrokerToControllerRequestHeader is the header of
// CONTROLLER_REGISTER_BROKER (1003): a broker that holds an applied id
// reports its (possibly new) address and learns the group's master.
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName   string
	BrokerName    string
	BrokerID      int64
	BrokerAddress string
	InvokeTime    int64
}

// Encode returns the ext fields.
func (h *RegisterBrokerToControllerRequestHeader) Encode() map[string]string {
	return map[string]string{"clusterName": h.ClusterName, "brokerName": h.BrokerName,
		"brokerId": itoa64(h.BrokerID), "brokerAddress": h.BrokerAddress, "invokeTime": itoa64(h.InvokeTime)}
}

// Decode reads the ext fields; brokerName, brokerId and brokerAddress are
// required.
func (h *RegisterBrokerToControllerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", false)
	h.BrokerName = r.str("brokerName", true)
	h.BrokerID = r.i64("brokerId", true)
	h.BrokerAddress = r.str("brokerAddress", true)
	h.InvokeTime = r.i64("invokeTime", false)
	return r.err
}

// RegisterBrokerToControllerResponseHeader answers
// CONTROLLER_REGISTER_BROKER; the master fields are set only when the
// group has an alive master. The body is the group's SyncStateSet.
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
type BrokerHeartbeatRequestHeader struct {
	ClusterName            string
	BrokerAddr             string
	BrokerName             string
	BrokerID               int64
	Epoch                  int32
	MaxOffset              int64
	ConfirmOffset          int64
	HeartbeatTimeoutMillis int64
	ElectionPriority       int32
}

// Encode returns the ext fields.
func (h *BrokerHeartbeatRequestHeader) Encode() map[string]string {
	m := map[string]string{"clusterName": h.ClusterName, "brokerAddr": h.BrokerAddr, "brokerName": h.BrokerName,
		"epoch": itoa32(h.Epoch), "maxOffset": itoa64(h.MaxOffset), "confirmOffset": itoa64(h.ConfirmOffset),
		"electionPriority": itoa32(h.ElectionPriority)}
	putID(m, "brokerId", h.BrokerID)
	if h.HeartbeatTimeoutMillis > 0 {
		m["heartbeatTimeoutMills"] = itoa64(h.HeartbeatTimeoutMillis)
	}
	return m
}

// Decode reads the ext fields; clusterName, brokerAddr and brokerName are
// required (@CFNotNull), brokerId defaults to NoBrokerID.
func (h *BrokerHeartbeatRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.ClusterName = r.str("clusterName", true)
	h.BrokerAddr = r.str("brokerAddr", true)
	h.BrokerName = r.str("brokerName", true)
	h.BrokerID = r.i64Or("brokerId", NoBrokerID)
	h.Epoch = r.i32("epoch", false)
	h.MaxOffset = r.i64("maxOffset", false)
	h.ConfirmOffset = r.i64("confirmOffset", false)
	h.HeartbeatTimeoutMillis = r.i64("heartbeatTimeoutMills", false)
	h.ElectionPriority = r.i32("electionPriority", false)
	return r.err
}

// NotifyBrokerRoleChangedRequestHeader is the header of
// NOTIFY_BROKER_ROLE_CHANGED (1008), which the controller leader sends to
// every broker of a group after an election; the body is the group's
// SyncStateSet.
type NotifyBrokerRoleChangedRequestHeader struct{ MasterInfo }

// Encode returns the ext fields.
func (h *NotifyBrokerRoleChangedRequestHeader) Encode() map[string]string {
	m := map[string]string{}
	h.encodeInto(m, true)
	return m
}

// Decode reads the ext fields (all optional).
func (h *NotifyBrokerRoleChangedRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ext}
	h.decodeFrom(&r)
	return r.err
}
