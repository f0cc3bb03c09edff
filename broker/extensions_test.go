package broker_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestTideExtensionsSwitch runs the broker with and without Tide
// extensions: without them it must answer as RocketMQ 4.9 does (the Tide
// request codes REQUEST_CODE_NOT_SUPPORTED, timer properties ignored so
// the message is delivered at once, runtime info V4_9_7 with no extension
// list); with them the same requests are served.
func TestTideExtensionsSwitch(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run("extensions="+strconv.FormatBool(on), func(t *testing.T) {
			e := newEnv(t, func(o *broker.Options) { o.TideExtensions = on })
			topic := uniq("ExtTopic")
			if err := createTopic(e.addr, topic, 1); err != nil {
				t.Fatal(err)
			}
			e.waitRoute(topic)

			resp := e.invoke(protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
			kv, err := protocol.DecodeRuntimeInfo(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			wantExt := ""
			if on {
				wantExt = strings.Join(protocol.TideExtensions(), ",")
			}
			if got := kv[protocol.RuntimeTideExtensions]; got != wantExt {
				t.Errorf("runtime info %s = %q, want %q", protocol.RuntimeTideExtensions, got, wantExt)
			}
			if desc := kv[protocol.RuntimeVersionDesc]; on == (desc == "V4_9_7") {
				t.Errorf("runtime info %s = %q with extensions %v", protocol.RuntimeVersionDesc, desc, on)
			}

			for _, code := range []int16{protocol.TideListHalfMessages, protocol.TideResumeHalfCheck,
				protocol.TideForceEndTransaction, protocol.TideRecallTimer, protocol.TideHAStatus} {
				resp := e.invoke(protocol.NewRequest(code, map[string]string{"handle": "x", "topic": topic}, nil))
				if unsupported := resp.Code == protocol.RequestCodeNotSupported; unsupported == on {
					t.Errorf("code %d answered %s (%s) with extensions %v", code, protocol.CodeName(resp.Code), resp.Remark, on)
				}
			}

			// A timer one hour ahead: parked with extensions, an ordinary
			// message (visible now, property kept) without.
			p := e.producer()
			m := primitive.NewMessage(topic, []byte("timer"))
			due := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
			m.WithProperty(protocol.PropTimerDeliverMS, due)
			sendOne(t, p, m)
			sendOne(t, p, primitive.NewMessage(topic, []byte("sentinel"))) // stored after the timer message
			var msgs []*protocol.MessageExt
			waitFor(t, "the sentinel message", 10*time.Second, func() bool {
				msgs = e.pullAll("ext-reader", topic, 0)
				return len(msgs) > 0 && string(msgs[len(msgs)-1].Body) == "sentinel"
			})
			if on {
				if len(msgs) != 1 {
					t.Fatalf("a timer due in an hour is visible now: %d messages", len(msgs))
				}
				return
			}
			if len(msgs) != 2 || string(msgs[0].Body) != "timer" {
				t.Fatalf("without extensions the timer message must be stored as is and visible at once; got %d messages", len(msgs))
			}
			if got := msgs[0].Property(protocol.PropTimerDeliverMS); got != due {
				t.Errorf("%s = %q, want %q (kept, as RocketMQ 4.9 keeps unknown properties)", protocol.PropTimerDeliverMS, got, due)
			}
			if got := msgs[0].Property(protocol.PropTimerOutMS); got != "" {
				t.Errorf("%s = %q on a message no timer handled", protocol.PropTimerOutMS, got)
			}
		})
	}
}
