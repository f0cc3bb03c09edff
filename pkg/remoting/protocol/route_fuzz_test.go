package protocol

import (
	"testing"
)

func FuzzDecodeTopicRouteData(f *testing.F) {
	f.Add(sampleRoute().Encode())
	f.Add([]byte(`{"brokerDatas":[{"brokerAddrs":{0:"a:1",1:"b:2"},"brokerName":"x","cluster":"c"}],"queueDatas":[]}`))
	f.Add([]byte(`{"k":"{0:1"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTopicRouteData(data)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode and decode to the same route.
		if _, err := DecodeTopicRouteData(r.Encode()); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

func FuzzDecodeRegisterBrokerBody(f *testing.F) {
	b := sampleRegisterBody()
	plain, _ := b.Encode(false)
	comp, _ := b.Encode(true)
	f.Add(plain, false)
	f.Add(comp, true)
	f.Add([]byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01}, true)
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		_, _ = DecodeRegisterBrokerBody(data, compressed) // must not panic
	})
}
