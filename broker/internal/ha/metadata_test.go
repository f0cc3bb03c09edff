package ha

import (
	"errors"
	"reflect"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestMetadataRoundTrip(t *testing.T) {
	m := &Metadata{
		Topics: protocol.TopicConfigSerializeWrapper{
			TopicConfigTable: map[string]protocol.TopicConfig{"TopicA": {TopicName: "TopicA", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: "SINGLE_TAG"}},
			DataVersion:      protocol.DataVersion{Timestamp: 1700000000000, Counter: 3},
		},
		Offsets:      map[string]map[string]int64{"TopicA@g1": {"0": 10, "3": 7}},
		DelayOffsets: map[string]int64{"1": 5, "18": 0},
		Groups: protocol.SubscriptionGroupWrapper{
			SubscriptionGroupTable: map[string]protocol.SubscriptionGroupConfig{"g1": protocol.DefaultSubscriptionGroupConfig("g1")},
			DataVersion:            protocol.DataVersion{Counter: 1},
		},
	}
	back, err := DecodeMetadata(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, m)
	}
}

func TestMetadataEmptyAndBad(t *testing.T) {
	for _, body := range []string{string((&Metadata{}).Encode()), `{}`, `{"offsets":{"t@g":null}}`} {
		m, err := DecodeMetadata([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if m.Topics.TopicConfigTable == nil || m.Offsets == nil || m.DelayOffsets == nil || m.Groups.SubscriptionGroupTable == nil {
			t.Fatalf("%s: nil maps in %+v", body, m)
		}
		for k, q := range m.Offsets {
			if q == nil {
				t.Fatalf("%s: nil offsets for %s", body, k)
			}
		}
	}
	for _, body := range []string{``, `[`, `{"offsets":[1]}`, `{"delayOffsets":{"1":"x"}}`} {
		if _, err := DecodeMetadata([]byte(body)); !errors.Is(err, ErrBadMetadata) {
			t.Errorf("DecodeMetadata(%q) = %v, want ErrBadMetadata", body, err)
		}
	}
}
