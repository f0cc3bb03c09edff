package mqclient

import (
	"context"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestRequestHeaderSerializeType: the client sends the ROCKETMQ binary
// header unless WithJSONHeaders, signed or not, and the broker reads the
// same send header either way.
func TestRequestHeaderSerializeType(t *testing.T) {
	creds := WithCredentials(Credentials{AccessKey: "ak", SecretKey: "sk"})
	tests := []struct {
		name   string
		opts   []Option
		want   byte
		signed bool
	}{
		{"default", nil, protocol.SerializeRocketMQ, false},
		{"json", []Option{WithJSONHeaders()}, protocol.SerializeJSON, false},
		{"default signed", []Option{creds}, protocol.SerializeRocketMQ, true},
		{"json signed", []Option{WithJSONHeaders(), creds}, protocol.SerializeJSON, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeBroker(t, "broker-a")
			ns := startFakeNameServer(t, "orders", 1, a)
			p := newTestProducer(t, append([]Option{WithNameServers(ns)}, tt.opts...)...)
			if _, err := p.Send(context.Background(), &Message{Topic: "orders", Tag: "t", Body: []byte("x")}); err != nil {
				t.Fatal(err)
			}
			a.mu.Lock()
			req := a.log[0]
			a.mu.Unlock()
			if req.SerializeType != tt.want {
				t.Errorf("serialize type %d, want %d", req.SerializeType, tt.want)
			}
			h, err := protocol.DecodeSendRequest(req)
			if err != nil || h.Topic != "orders" || h.ProducerGroup == "" || protocol.DecodeProperties(h.Properties)[protocol.PropTags] != "t" {
				t.Errorf("send header %+v: %v", h, err)
			}
			if signed := req.Ext("Signature") != "" && req.Ext("AccessKey") == "ak"; signed != tt.signed {
				t.Errorf("signed %v, want %v (ext %v)", signed, tt.signed, req.ExtFields)
			}
		})
	}
}
