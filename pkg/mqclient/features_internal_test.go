package mqclient

import (
	"slices"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestFeaturesOf(t *testing.T) {
	tide := map[string]string{protocol.RuntimeVersionDesc: "Tide (RocketMQ 4.x protocol)",
		protocol.RuntimeTideExtensions: "timers, timerRecall,halfMessages,haStatus,idempotentSend,later"}
	cases := []struct {
		name  string
		kv    map[string]string
		major int
		want  BrokerFeatures
	}{
		{"tide", tide, 4, BrokerFeatures{Timers: true, TimerRecall: true, HalfMessages: true, HAStatus: true, IdempotentSend: true}},
		{"tide without extensions", map[string]string{protocol.RuntimeVersionDesc: "V4_9_7"}, 4, BrokerFeatures{}},
		{"rocketmq 4.9.4", map[string]string{protocol.RuntimeVersionDesc: "V4_9_4"}, 4, BrokerFeatures{}},
		{"rocketmq 5.1.4", map[string]string{protocol.RuntimeVersionDesc: "V5_1_4"}, 5, BrokerFeatures{Timers: true}},
		{"tide with timers only", map[string]string{protocol.RuntimeTideExtensions: "timers"}, 4, BrokerFeatures{Timers: true}},
		{"unknown version", map[string]string{protocol.RuntimeVersionDesc: "snapshot"}, 0, BrokerFeatures{}},
		{"empty", map[string]string{}, 0, BrokerFeatures{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := featuresOf("b:1", c.kv)
			if f.Addr != "b:1" || f.Timers != c.want.Timers || f.TimerRecall != c.want.TimerRecall ||
				f.HalfMessages != c.want.HalfMessages || f.HAStatus != c.want.HAStatus || f.IdempotentSend != c.want.IdempotentSend {
				t.Errorf("featuresOf(%v) = %+v, want %+v", c.kv, f, c.want)
			}
			if f.Major() != c.major {
				t.Errorf("Major() = %d, want %d", f.Major(), c.major)
			}
		})
	}
	if f := featuresOf("", tide); !slices.Equal(f.Extensions, []string{"timers", "timerRecall", "halfMessages", "haStatus", "idempotentSend", "later"}) {
		t.Errorf("extensions %v", f.Extensions)
	}
}
