package protocol

import "testing"

// FuzzControllerDecoders feeds arbitrary ext maps and bodies to every
// controller header and body decoder: an error or a value, never a panic,
// and whatever decoded encodes and decodes to the same value.
func FuzzControllerDecoders(f *testing.F) {
	f.Add("brokerName=b\nmasterBrokerId=1\nmasterEpoch=2", []byte(`{"syncStateSet":[1,2],"syncStateSetEpoch":3}`))
	f.Add("clusterName=c\nbrokerAddr=a\nbrokerName=b\nbrokerId=x\nheartbeatTimeoutMills=-1", []byte(`["a","b"]`))
	f.Add("masterBrokerId=\nmasterEpoch=99999999999\nisLeader=maybe", []byte(`{"replicasInfoTable":{"b":{"masterBrokerId":1}}}`))
	f.Fuzz(func(t *testing.T, text string, body []byte) {
		ext := extFromText(text)
		decoders := []func() Header{
			func() Header { return &AlterSyncStateSetRequestHeader{} }, func() Header { return &AlterSyncStateSetResponseHeader{} },
			func() Header { return &ElectMasterRequestHeader{} }, func() Header { return &ElectMasterResponseHeader{} },
			func() Header { return &GetReplicaInfoRequestHeader{} }, func() Header { return &GetReplicaInfoResponseHeader{} },
			func() Header { return &GetMetaDataResponseHeader{} }, func() Header { return &GetNextBrokerIDRequestHeader{} },
			func() Header { return &GetNextBrokerIDResponseHeader{} }, func() Header { return &ApplyBrokerIDRequestHeader{} },
			func() Header { return &ApplyBrokerIDResponseHeader{} }, func() Header { return &RegisterBrokerToControllerRequestHeader{} },
			func() Header { return &RegisterBrokerToControllerResponseHeader{} }, func() Header { return &BrokerHeartbeatRequestHeader{} },
			func() Header { return &NotifyBrokerRoleChangedRequestHeader{} },
		}
		for _, mk := range decoders {
			h := mk()
			if h.Decode(ext) != nil {
				continue
			}
			again := mk()
			if err := again.Decode(h.Encode()); err != nil {
				t.Fatalf("%T: re-decode of %v: %v", h, h.Encode(), err)
			}
		}
		_, _ = DecodeSyncStateSet(body)
		_, _ = DecodeElectMasterResponseBody(body)
		_, _ = DecodeBrokerReplicasInfo(body)
		_, _ = DecodeEpochEntryCache(body)
		_, _ = DecodeBrokerNames(body)
	})
}
