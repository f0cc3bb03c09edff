package controller

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestMetrics(t *testing.T) {
	tc := newTestCluster(t, 1, func(o *Options) { o.MetricsListenAddr = "127.0.0.1:0" })
	tc.waitLeader()
	ctx := testCtx(t)
	b1, _ := newFakeBroker(t, tc, 1), newFakeBroker(t, tc, 2)
	if _, _, err := b1.cli.ElectMaster(ctx, &protocol.ElectMasterRequestHeader{BrokerName: "b", BrokerID: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b1.cli.AlterSyncStateSet(ctx, "b", 1, 1, &protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + tc.nodes[0].MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`tide_controller_is_leader 1`,
		`tide_controller_elections_total{outcome="elected",trigger="broker"} 1`,
		`tide_controller_master_epoch{broker_name="b"} 1`,
		`tide_controller_sync_state_set_epoch{broker_name="b"} 2`,
		`tide_controller_sync_state_set_size{broker_name="b"} 2`,
		`tide_controller_group_has_master{broker_name="b"} 1`,
		`tide_controller_replicas{broker_name="b"} 2`,
		`tide_controller_requests_total{request="1002",response="SUCCESS"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestBadInput: every malformed request gets a clear code and remark, and
// the node keeps serving.
func TestBadInput(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	tc.waitLeader()
	ctx := testCtx(t)
	rc := remoting.NewClient(remoting.ClientOptions{})
	defer rc.Close()
	addr := tc.peers[0].Addr
	cases := []struct {
		name string
		req  *protocol.Command
		code int16
	}{
		{"apply without check code", protocol.NewRequest(protocol.ControllerApplyBrokerID,
			map[string]string{"clusterName": "c", "brokerName": "b", "appliedBrokerId": "1"}, nil), protocol.ControllerInvalidRequest},
		{"elect with a bad id", protocol.NewRequest(protocol.ControllerElectMaster,
			map[string]string{"brokerName": "b", "brokerId": "one"}, nil), protocol.ControllerInvalidRequest},
		{"alter with a bad body", protocol.NewRequest(protocol.ControllerAlterSyncStateSet,
			(&protocol.AlterSyncStateSetRequestHeader{BrokerName: "b", MasterBrokerID: 1, MasterEpoch: 1}).Encode(), []byte("{")), protocol.ControllerInvalidRequest},
		{"sync state data with a bad body", protocol.NewRequest(protocol.ControllerGetSyncStateData, nil, []byte(`{"a":1}`)), protocol.ControllerInvalidRequest},
		{"heartbeat without broker name", protocol.NewRequest(protocol.BrokerHeartbeat,
			map[string]string{"clusterName": "c", "brokerAddr": "a:1"}, nil), protocol.ControllerInvalidRequest},
		{"heartbeat of an unknown broker without id", protocol.NewRequest(protocol.BrokerHeartbeat,
			map[string]string{"clusterName": "c", "brokerAddr": "a:1", "brokerName": "b"}, nil), protocol.ControllerBrokerNeedToBeRegistered},
		{"heartbeat of an unregistered broker id", protocol.NewRequest(protocol.BrokerHeartbeat,
			(&protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerAddr: "a:1", BrokerName: "b", BrokerID: 7}).Encode(), nil),
			protocol.ControllerBrokerNeedToBeRegistered},
		{"register before applying", protocol.NewRequest(protocol.ControllerRegisterBroker,
			(&protocol.RegisterBrokerToControllerRequestHeader{BrokerName: "b", BrokerID: 1, BrokerAddress: "a:1"}).Encode(), nil), protocol.ControllerBrokerNeedToBeRegistered},
		{"replica info of an unknown group", protocol.NewRequest(protocol.ControllerGetReplicaInfo,
			(&protocol.GetReplicaInfoRequestHeader{BrokerName: "nope"}).Encode(), nil), protocol.ControllerBrokerMetadataNotExist},
		{"elect in an unknown group", protocol.NewRequest(protocol.ControllerElectMaster,
			(&protocol.ElectMasterRequestHeader{BrokerName: "nope", BrokerID: 1}).Encode(), nil), protocol.ControllerBrokerNeedToBeRegistered},
		{"unknown code", protocol.NewRequest(1099, nil, nil), protocol.RequestCodeNotSupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := rc.Invoke(ctx, addr, c.req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != c.code || resp.Remark == "" {
				t.Fatalf("code %d (%s) remark %q, want %d with a remark", resp.Code, protocol.CodeName(resp.Code), resp.Remark, c.code)
			}
		})
	}
	if md, err := newFakeBrokerClient(rc, tc).Metadata(ctx, addr); err != nil || !md.IsLeader {
		t.Fatalf("node after bad input: %+v %v", md, err)
	}
}
