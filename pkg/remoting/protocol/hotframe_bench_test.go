package protocol

import (
	"fmt"
	"reflect"
	"testing"
)

// hotFrame is one frame of every send or pull.
type hotFrame struct {
	name string
	code int16
	flag int32
	h    Header
	// read is how the receiver gets the header of the decoded frame: the
	// broker a send or pull request's through the header DecodeFrame typed
	// (DecodeSendRequest, DecodePullRequest: ExtFields does not hold its
	// fields then), the client a response's from ExtFields. It returns a
	// header of h's type.
	read func(*Command) (Header, error)
	body []byte
}

// extRead reads a response's header from its ext fields into h, as
// pkg/mqclient does.
func extRead(h Header) func(*Command) (Header, error) {
	return func(c *Command) (Header, error) { return h, h.Decode(c.ExtFields) }
}

// hotFrames are the frames of every send and pull: the client's requests
// and the broker's responses, with the body sizes of a 1 KiB message.
func hotFrames() []hotFrame {
	return []hotFrame{
		{"SendV2", SendMessageV2, 0, hotSendHeader().V2(), func(c *Command) (Header, error) {
			h, err := DecodeSendRequest(c)
			return (*SendMessageRequestHeaderV2)(h), err
		}, make([]byte, 1024)},
		{"SendResponse", Success, FlagResponse, &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 3,
			QueueOffset: 100, MsgRegion: "DefaultRegion"}, extRead(new(SendMessageResponseHeader)), nil},
		{"Pull", PullMessage, 0, &PullMessageRequestHeader{ConsumerGroup: "consumer-group", Topic: "orders", QueueID: 1,
			QueueOffset: 5000, MaxMsgNums: 32, SysFlag: PullSuspend | PullSubscription, SuspendTimeoutMillis: 20000,
			Subscription: "*", SubVersion: 1690000000000, ExpressionType: ExpressionTypeTag},
			func(c *Command) (Header, error) { return DecodePullRequest(c) }, nil},
		{"PullResponse", Success, FlagResponse, &PullMessageResponseHeader{NextBeginOffset: 5032, MaxOffset: 9000},
			extRead(new(PullMessageResponseHeader)), make([]byte, 32*1100)},
	}
}

// BenchmarkHotFrameEncode is what a sender pays per frame: the typed
// header to ext fields (a map), then the frame, in each serialize type.
// hotframe_typed_bench_test.go adds the map-less binary path.
func BenchmarkHotFrameEncode(b *testing.B) {
	for _, hf := range hotFrames() {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			b.Run(fmt.Sprintf("%s/type%d-map", hf.name, st), func(b *testing.B) {
				buf := make([]byte, 0, 64<<10)
				b.ReportAllocs()
				for b.Loop() {
					c := Command{Code: hf.code, Language: LangGo, Version: Version, Flag: hf.flag, ExtFields: hf.h.Encode(),
						Body: hf.body, SerializeType: st}
					var err error
					if buf, err = c.AppendFrame(buf[:0]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkHotFrameDecode is what a receiver pays per frame: the frame to
// a Command, then to the typed header the way the receiver reads it
// (hotFrame.read): a send or pull request's header is typed by DecodeFrame
// itself, a response's is decoded from the ext fields.
func BenchmarkHotFrameDecode(b *testing.B) {
	for _, hf := range hotFrames() {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			b.Run(fmt.Sprintf("%s/type%d", hf.name, st), func(b *testing.B) {
				c := Command{Code: hf.code, Language: LangGo, Version: Version, Flag: hf.flag, ExtFields: hf.h.Encode(),
					Body: hf.body, SerializeType: st}
				frame, err := c.Encode()
				if err != nil {
					b.Fatal(err)
				}
				// The path measured is the one the receiver takes, and it
				// gives back the header sent.
				got, err := DecodeFrame(frame[4:])
				if err != nil {
					b.Fatal(err)
				}
				if typed := !got.IsResponse() && newTypedHeader(got.Code) != nil; got.typedHeader != typed {
					b.Fatalf("DecodeFrame typed the header: %v, want %v", got.typedHeader, typed)
				}
				if h, err := hf.read(got); err != nil || !reflect.DeepEqual(h, hf.h) {
					b.Fatalf("read %+v, %v; want %+v", h, err, hf.h)
				}
				b.ReportAllocs()
				for b.Loop() {
					got, err := DecodeFrame(frame[4:])
					if err != nil {
						b.Fatal(err)
					}
					if _, err := hf.read(got); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
