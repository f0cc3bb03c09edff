package protocol

import (
	"os"
	"testing"
)

// BenchmarkSendRequestDecode is what the broker pays per send request to
// get from the frame to its send header: the official client's JSON
// SEND_MESSAGE (recorded, 1 KiB body added) and pkg/mqclient's binary
// SEND_MESSAGE_V2, with the header typed by DecodeFrame ("typed") and
// through the ext map as before ("map").
func BenchmarkSendRequestDecode(b *testing.B) {
	raw, err := os.ReadFile(goldenDir + "/10-send-message.bin")
	if err != nil {
		b.Fatal(err)
	}
	official, err := DecodeFrame(raw[4:])
	if err != nil {
		b.Fatal(err)
	}
	official.Body = make([]byte, 1024)
	officialFrame, err := official.Encode()
	if err != nil {
		b.Fatal(err)
	}
	binary := Command{Code: SendMessageV2, Language: LangGo, Version: Version, Header: hotSendHeader().V2(),
		Body: make([]byte, 1024), SerializeType: SerializeRocketMQ}
	binaryFrame, err := binary.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for _, fr := range []struct {
		name  string
		frame []byte
	}{{"official-json", officialFrame[4:]}, {"mqclient-binary", binaryFrame[4:]}} {
		for _, typed := range []bool{false, true} {
			name := fr.name + "/map"
			if typed {
				name = fr.name + "/typed"
			}
			b.Run(name, func(b *testing.B) {
				saved := typedHeaders
				typedHeaders = typed
				defer func() { typedHeaders = saved }()
				b.ReportAllocs()
				for b.Loop() {
					c, err := DecodeFrame(fr.frame)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := DecodeSendRequest(c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPullRequestDecode is what the broker pays per pull request to
// get from the frame to its pull header: the official client's JSON
// PULL_MESSAGE (recorded) and pkg/mqclient's binary one, with the header
// typed by DecodeFrame ("typed") and through the ext map ("map").
func BenchmarkPullRequestDecode(b *testing.B) {
	raw, err := os.ReadFile(goldenDir + "/11-pull.bin")
	if err != nil {
		b.Fatal(err)
	}
	binary := Command{Code: PullMessage, Language: LangGo, Version: Version, SerializeType: SerializeRocketMQ,
		Header: &PullMessageRequestHeader{ConsumerGroup: "bench-group", Topic: "bench-topic", QueueID: 3, QueueOffset: 123456,
			MaxMsgNums: 256, SysFlag: PullSuspend | PullCommitOffset | PullSubscription, CommitOffset: 123400,
			SuspendTimeoutMillis: 20000, Subscription: "*", SubVersion: 1796045358404, ExpressionType: ExpressionTypeTag}}
	binaryFrame, err := binary.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for _, fr := range []struct {
		name  string
		frame []byte
	}{{"official-json", raw[4:]}, {"mqclient-binary", binaryFrame[4:]}} {
		for _, typed := range []bool{false, true} {
			name := fr.name + "/map"
			if typed {
				name = fr.name + "/typed"
			}
			b.Run(name, func(b *testing.B) {
				saved := typedHeaders
				typedHeaders = typed
				defer func() { typedHeaders = saved }()
				b.ReportAllocs()
				for b.Loop() {
					c, err := DecodeFrame(fr.frame)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := DecodePullRequest(c); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
