package protocol

import (
	"errors"
	"reflect"
	"testing"
)

func TestControllerHeadersRoundTrip(t *testing.T) {
	mi := MasterInfo{MasterBrokerID: 2, MasterAddress: "127.0.0.1:10911", MasterEpoch: 3, SyncStateSetEpoch: 4}
	cases := []struct {
		name     string
		h        Header
		empty    func() Header
		required []string
	}{
		{"AlterSyncStateSetRequest", &AlterSyncStateSetRequestHeader{BrokerName: "b", MasterBrokerID: 1, MasterEpoch: 2, InvokeTime: 5},
			func() Header { return new(AlterSyncStateSetRequestHeader) }, []string{"brokerName", "masterBrokerId", "masterEpoch"}},
		{"AlterSyncStateSetResponse", &AlterSyncStateSetResponseHeader{NewSyncStateSetEpoch: 7},
			func() Header { return new(AlterSyncStateSetResponseHeader) }, nil},
		{"ElectMasterRequest", &ElectMasterRequestHeader{ClusterName: "c", BrokerName: "b", BrokerID: 3, DesignateElect: true, InvokeTime: 9},
			func() Header { return new(ElectMasterRequestHeader) }, []string{"brokerName"}},
		{"ElectMasterResponse", &ElectMasterResponseHeader{mi}, func() Header { return new(ElectMasterResponseHeader) }, nil},
		{"GetReplicaInfoRequest", &GetReplicaInfoRequestHeader{BrokerName: "b"},
			func() Header { return new(GetReplicaInfoRequestHeader) }, []string{"brokerName"}},
		{"GetReplicaInfoResponse", &GetReplicaInfoResponseHeader{MasterInfo{MasterBrokerID: 2, MasterAddress: "a", MasterEpoch: 3}},
			func() Header { return new(GetReplicaInfoResponseHeader) }, nil},
		{"GetMetaDataResponse", &GetMetaDataResponseHeader{Group: "g", ControllerLeaderID: "n1", ControllerLeaderAddress: "a:1", IsLeader: true, Peers: "a:1,a:2"},
			func() Header { return new(GetMetaDataResponseHeader) }, nil},
		{"GetNextBrokerIDRequest", &GetNextBrokerIDRequestHeader{ClusterName: "c", BrokerName: "b"},
			func() Header { return new(GetNextBrokerIDRequestHeader) }, []string{"brokerName"}},
		{"GetNextBrokerIDResponse", &GetNextBrokerIDResponseHeader{ClusterName: "c", BrokerName: "b", NextBrokerID: 4},
			func() Header { return new(GetNextBrokerIDResponseHeader) }, nil},
		{"ApplyBrokerIDRequest", &ApplyBrokerIDRequestHeader{ClusterName: "c", BrokerName: "b", AppliedBrokerID: 1, RegisterCheckCode: "a:1;5"},
			func() Header { return new(ApplyBrokerIDRequestHeader) }, []string{"clusterName", "brokerName", "appliedBrokerId", "registerCheckCode"}},
		{"ApplyBrokerIDResponse", &ApplyBrokerIDResponseHeader{ClusterName: "c", BrokerName: "b"},
			func() Header { return new(ApplyBrokerIDResponseHeader) }, nil},
		{"RegisterBrokerToControllerRequest", &RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: "b", BrokerID: 1, BrokerAddress: "a:1", InvokeTime: 3},
			func() Header { return new(RegisterBrokerToControllerRequestHeader) }, []string{"brokerName", "brokerId", "brokerAddress"}},
		{"RegisterBrokerToControllerResponse", &RegisterBrokerToControllerResponseHeader{ClusterName: "c", BrokerName: "b", MasterInfo: mi},
			func() Header { return new(RegisterBrokerToControllerResponseHeader) }, nil},
		{"BrokerHeartbeatRequest", &BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "b", BrokerID: 2, Epoch: 3,
			MaxOffset: 100, ConfirmOffset: 90, HeartbeatTimeoutMillis: 1000, ElectionPriority: 1},
			func() Header { return new(BrokerHeartbeatRequestHeader) }, []string{"clusterName", "brokerAddr", "brokerName"}},
		{"NotifyBrokerRoleChangedRequest", &NotifyBrokerRoleChangedRequestHeader{mi},
			func() Header { return new(NotifyBrokerRoleChangedRequestHeader) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ext := tc.h.Encode()
			got := tc.empty()
			if err := got.Decode(ext); err != nil {
				t.Fatalf("Decode(%v): %v", ext, err)
			}
			if !reflect.DeepEqual(got, tc.h) {
				t.Fatalf("round trip: got %+v, want %+v", got, tc.h)
			}
			for _, k := range tc.required {
				m := tc.h.Encode()
				delete(m, k)
				if err := tc.empty().Decode(m); !errors.Is(err, ErrMissingField) {
					t.Errorf("without %s: err = %v, want ErrMissingField", k, err)
				}
			}
		})
	}
}

func TestControllerHeadersAbsentBrokerID(t *testing.T) {
	// Java's null Long: left out on the wire, NoBrokerID in Go.
	h := &ElectMasterResponseHeader{MasterInfo{MasterBrokerID: NoBrokerID, MasterEpoch: 2}}
	ext := h.Encode()
	if _, ok := ext["masterBrokerId"]; ok {
		t.Fatalf("masterBrokerId written for no master: %v", ext)
	}
	var got ElectMasterResponseHeader
	if err := got.Decode(ext); err != nil || got.MasterBrokerID != NoBrokerID || got.MasterEpoch != 2 {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	var e ElectMasterRequestHeader
	if err := e.Decode(map[string]string{"brokerName": "b"}); err != nil || e.BrokerID != NoBrokerID {
		t.Fatalf("elect request without brokerId = %+v, %v", e, err)
	}
	reg := &RegisterBrokerToControllerResponseHeader{ClusterName: "c", BrokerName: "b", MasterInfo: MasterInfo{MasterBrokerID: NoBrokerID}}
	if _, ok := reg.Encode()["masterEpoch"]; ok {
		t.Fatalf("register response without master carries master fields: %v", reg.Encode())
	}
	var bad BrokerHeartbeatRequestHeader
	err := bad.Decode(map[string]string{"clusterName": "c", "brokerAddr": "a", "brokerName": "b", "epoch": "x"})
	if !errors.Is(err, ErrBadField) {
		t.Fatalf("bad epoch: err = %v, want ErrBadField", err)
	}
}

func TestControllerBodies(t *testing.T) {
	s := &SyncStateSet{SyncStateSet: []int64{3, 1, 2}, SyncStateSetEpoch: 5}
	if got := string(s.Encode()); got != `{"syncStateSet":[1,2,3],"syncStateSetEpoch":5}` {
		t.Fatalf("SyncStateSet = %s", got)
	}
	ds, err := DecodeSyncStateSet(s.Encode())
	if err != nil || !reflect.DeepEqual(ds, &SyncStateSet{SyncStateSet: []int64{1, 2, 3}, SyncStateSetEpoch: 5}) {
		t.Fatalf("DecodeSyncStateSet = %+v, %v", ds, err)
	}
	eb := &ElectMasterResponseBody{BrokerMemberGroup: &BrokerMemberGroup{Cluster: "c", BrokerName: "b",
		BrokerAddrs: map[int64]string{1: "a:1", 2: "a:2"}}, SyncStateSet: []int64{2}}
	de, err := DecodeElectMasterResponseBody(eb.Encode())
	if err != nil || !reflect.DeepEqual(de, eb) {
		t.Fatalf("ElectMasterResponseBody = %+v, %v", de, err)
	}
	ri := &BrokerReplicasInfo{ReplicasInfoTable: map[string]ReplicasInfo{"b": {MasterBrokerID: 1, MasterAddress: "a:1",
		MasterEpoch: 2, SyncStateSetEpoch: 3, InSyncReplicas: []ReplicaIdentity{{"b", 1, "a:1", true}},
		NotInSyncReplicas: []ReplicaIdentity{{"b", 2, "a:2", false}}}}}
	dr, err := DecodeBrokerReplicasInfo(ri.Encode())
	if err != nil || !reflect.DeepEqual(dr, ri) {
		t.Fatalf("BrokerReplicasInfo = %+v, %v", dr, err)
	}
	ec := &EpochEntryCache{ClusterName: "c", BrokerName: "b", BrokerID: 1, EpochList: []EpochEntry{{1, 0, 100}}, MaxOffset: 100}
	dc, err := DecodeEpochEntryCache(ec.Encode())
	if err != nil || !reflect.DeepEqual(dc, ec) {
		t.Fatalf("EpochEntryCache = %+v, %v", dc, err)
	}
	names, err := DecodeBrokerNames(EncodeBrokerNames([]string{"a", "b"}))
	if err != nil || !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Fatalf("broker names = %v, %v", names, err)
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"syncStateSet":"x"}`)} {
		if _, err := DecodeSyncStateSet(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeSyncStateSet(%q) err = %v, want ErrMalformed", bad, err)
		}
	}
	if CodeName(ControllerNotLeader) != "CONTROLLER_NOT_LEADER" {
		t.Fatalf("CodeName(2007) = %s", CodeName(ControllerNotLeader))
	}
}

func TestAlterSyncStateSetNegativeMasterRoundTrips(t *testing.T) {
	// a required id is always written, even -1, so what decoded re-decodes
	h := &AlterSyncStateSetRequestHeader{BrokerName: "b", MasterBrokerID: -1, MasterEpoch: 1}
	var got AlterSyncStateSetRequestHeader
	if err := got.Decode(h.Encode()); err != nil || got != *h {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
}
