package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// update rewrites the golden files in testdata instead of comparing:
// go test -run Golden -update. Other golden tests of this package share it.
var update = flag.Bool("update", false, "rewrite golden files in testdata")

// pullHeaderJSON is the PULL_MESSAGE header recorded from rocketmq-client-go
// v2.1.2 (rocketmq-protocol.md §1.3).
const pullHeaderJSON = `{"code":11,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"suspendTimeoutMillis":"20000","expressionType":"TAG","consumerGroup":"g","queueOffset":"5","subscription":"","subVersion":"0","topic":"t","queueId":"1","maxMsgNums":"32","sysFlag":"2","commitOffset":"0"}}`

// javaResponseJSON is a response header as a Java 4.9.7 broker writes it:
// fastjson, keys sorted, nulls (remark) dropped, serializeTypeCurrentRPC.
const javaResponseJSON = `{"code":0,"extFields":{"msgId":"7F00000100002A9F0000000000000000","queueId":"1","queueOffset":"0"},"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":407}`

// jsonFrame wraps a JSON header and body into a frame without its length
// prefix, as DecodeFrame takes it.
func jsonFrame(hdr string, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
	b = append(b, hdr...)
	return append(b, body...)
}

func pullExt() map[string]string {
	return map[string]string{
		"suspendTimeoutMillis": "20000", "expressionType": "TAG", "consumerGroup": "g", "queueOffset": "5",
		"subscription": "", "subVersion": "0", "topic": "t", "queueId": "1", "maxMsgNums": "32",
		"sysFlag": "2", "commitOffset": "0",
	}
}

// equalCommands compares two commands, treating nil and empty ext maps and
// bodies as equal, and a typed Header as the fields it encodes.
func equalCommands(a, b *Command) error {
	ca, cb := *a, *b
	ca.ExtFields, ca.Header = a.Fields(), nil
	cb.ExtFields, cb.Header = b.Fields(), nil
	a, b = &ca, &cb
	switch {
	case a.Code != b.Code, a.Language != b.Language, a.Version != b.Version, a.Opaque != b.Opaque,
		a.Flag != b.Flag, a.Remark != b.Remark, a.SerializeType != b.SerializeType:
		return fmt.Errorf("header differs:\n %+v\n %+v", *a, *b)
	case len(a.ExtFields) != len(b.ExtFields) || !maps.Equal(a.ExtFields, b.ExtFields) && len(a.ExtFields) > 0:
		return fmt.Errorf("ext differs:\n %v\n %v", a.ExtFields, b.ExtFields)
	case !bytes.Equal(a.Body, b.Body):
		return fmt.Errorf("body differs: %d vs %d bytes", len(a.Body), len(b.Body))
	}
	return nil
}

// goldenCommands are the commands whose encodings are pinned in
// testdata/frames/<name>.bin.
func goldenCommands() []struct {
	name string
	cmd  *Command
} {
	pull := &Command{Code: PullMessage, Language: LangGo, Version: VersionV4_5_2, Opaque: 1, ExtFields: pullExt()}
	pullBin := *pull
	pullBin.SerializeType = SerializeRocketMQ
	// The same pull from its typed header (Command.Header, written without
	// a map) must give the same bytes.
	pullTyped := &Command{Code: PullMessage, Language: LangGo, Version: VersionV4_5_2, Opaque: 1, SerializeType: SerializeRocketMQ,
		Header: &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "t", QueueID: 1, QueueOffset: 5, MaxMsgNums: 32,
			SysFlag: PullSuspend, SuspendTimeoutMillis: 20000, ExpressionType: ExpressionTypeTag}}
	send := hotSendHeader()
	return []struct {
		name string
		cmd  *Command
	}{
		{"pull_request_json", pull},
		{"pull_request_binary", &pullBin},
		{"pull_request_binary", pullTyped},
		// The hot frames pkg/mqclient and the broker send with the ROCKETMQ
		// binary header, from their typed headers.
		{"send_v2_request_binary", &Command{Code: SendMessageV2, Language: LangGo, Version: Version, Opaque: 11,
			Header: send.V2(), Body: []byte("hello"), SerializeType: SerializeRocketMQ}},
		{"send_response_binary", &Command{Code: Success, Language: LangGo, Version: Version, Opaque: 11, Flag: FlagResponse,
			Header: &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000064", QueueID: 3, QueueOffset: 100,
				MsgRegion: "DefaultRegion"}, SerializeType: SerializeRocketMQ}},
		{"pull_response_binary", &Command{Code: Success, Language: LangGo, Version: Version, Opaque: 12, Flag: FlagResponse,
			Header: &PullMessageResponseHeader{NextBeginOffset: 5032, MaxOffset: 9000}, Body: []byte{0, 0, 0, 1},
			SerializeType: SerializeRocketMQ}},
		{"send_response_json", &Command{Code: Success, Language: LangGo, Version: Version, Opaque: 7, Flag: FlagResponse,
			ExtFields: map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "42"}}},
		{"error_response_json", &Command{Code: SystemError, Language: LangGo, Version: Version, Opaque: -5, Flag: FlagResponse,
			Remark: "bad \"header\"\n\ttab \\ \x01\x02 é 中", ExtFields: map[string]string{}}},
		{"heartbeat_request_json", &Command{Code: HeartBeat, Language: LangGo, Version: VersionV4_5_2, Opaque: 3,
			ExtFields: map[string]string{}, Body: []byte(`{"clientID":"10.0.0.1@1","producerDataSet":[],"consumerDataSet":[]}`)}},
		{"oneway_request_json", &Command{Code: UpdateConsumerOffset, Language: LangGo, Version: Version, Opaque: 9, Flag: FlagOneway,
			ExtFields: map[string]string{"consumerGroup": "g", "topic": "t", "queueId": "0", "commitOffset": "10"}}},
		{"response_binary", &Command{Code: PullNotFound, Language: LangJava, Version: Version, Opaque: 77, Flag: FlagResponse,
			Remark: "no new message", ExtFields: map[string]string{"nextBeginOffset": "8", "minOffset": "0", "maxOffset": "8"},
			Body: []byte{0, 1, 2, 3}, SerializeType: SerializeRocketMQ}},
	}
}

func TestFrameGolden(t *testing.T) {
	for _, g := range goldenCommands() {
		t.Run(g.name, func(t *testing.T) {
			got, err := g.cmd.Encode()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "frames", g.name+".bin")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encoding differs from %s:\ngot:\n%s\nwant:\n%s", path, hex.Dump(got), hex.Dump(want))
			}
			back, err := DecodeFrame(want[4:])
			if err != nil {
				t.Fatal(err)
			}
			if err := equalCommands(back, g.cmd); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
	}{
		{"empty", Command{}},
		{"request", Command{Code: SendMessage, Language: LangGo, Version: VersionV4_5_2, Opaque: 1,
			ExtFields: map[string]string{"a": "1", "b": ""}, Body: []byte("hello")}},
		{"response", Command{Code: TopicNotExist, Language: LangJava, Version: Version, Opaque: 1 << 30, Flag: FlagResponse,
			Remark: "topic[x] not exist, apply first please!"}},
		{"negative opaque and code", Command{Code: -1, Language: LangRust, Version: -3, Opaque: -2147483648, Flag: 3}},
		{"special characters", Command{Code: 1, Language: LangGo, Remark: "\x00\x1f\"\\/<>&\u2028 ü",
			ExtFields: map[string]string{"PROPERTIES": "KEYS\x01k1\x02TAGS\x01t\x02", "": "empty key", "ü": "\u00e9"}}},
		{"large body", Command{Code: PullMessage, Language: LangGo, Body: bytes.Repeat([]byte{0xAB}, 1<<20)}},
		{"typed send", Command{Code: SendMessageV2, Language: LangGo, Opaque: 5, Header: hotSendHeader().V2(), Body: []byte("x")}},
		{"typed pull and ext", Command{Code: PullMessage, Language: LangGo, Opaque: 6,
			Header:    &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "t", QueueOffset: -1, SubVersion: 1 << 62},
			ExtFields: map[string]string{ExtAccessKey: "ak", ExtSignature: "sig"}}},
		{"typed response", Command{Code: PullNotFound, Flag: FlagResponse, Remark: "none",
			Header: &PullMessageResponseHeader{NextBeginOffset: 1, MinOffset: -5, MaxOffset: 1<<63 - 1}}},
	}
	for _, tt := range tests {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			t.Run(fmt.Sprintf("%s/type%d", tt.name, st), func(t *testing.T) {
				cmd := tt.cmd
				cmd.SerializeType = st
				frame, err := cmd.Encode()
				if err != nil {
					t.Fatal(err)
				}
				if total := binary.BigEndian.Uint32(frame); int(total) != len(frame)-4 {
					t.Fatalf("length prefix %d, frame %d", total, len(frame))
				}
				if frame[4] != st {
					t.Fatalf("serialize type byte %d, want %d", frame[4], st)
				}
				got, err := ReadCommand(bytes.NewReader(frame), 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := equalCommands(got, &cmd); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func TestDecodeFrameClientAndJavaHeaders(t *testing.T) {
	tests := []struct {
		name string
		hdr  string
		want Command
	}{
		{"go client pull request", pullHeaderJSON, Command{Code: PullMessage, Language: LangGo, Version: 317, Opaque: 1,
			ExtFields: pullExt()}},
		{"java response", javaResponseJSON, Command{Code: Success, Language: LangJava, Version: 407, Opaque: 1, Flag: FlagResponse,
			ExtFields: map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "1", "queueOffset": "0"}}},
		{"java response without extFields", `{"code":17,"flag":1,"language":"JAVA","opaque":12,"remark":"topic[x] not exist","serializeTypeCurrentRPC":"JSON","version":407}`,
			Command{Code: TopicNotExist, Language: LangJava, Version: 407, Opaque: 12, Flag: FlagResponse, Remark: "topic[x] not exist"}},
		{"ext numbers and booleans (loose path)", `{"code":11,"extFields":{"queueId":3,"ok":true,"f":1.5,"n":null,"s":"x"},"flag":0,"language":"JAVA","opaque":4,"remark":null}`,
			Command{Code: PullMessage, Language: LangJava, Opaque: 4, ExtFields: map[string]string{"queueId": "3", "ok": "true", "f": "1.5", "n": "", "s": "x"}}}, // null reads as "", as on the fast path
		{"non-string language (loose path)", `{"code":34,"language":9,"opaque":2,"extFields":{}}`,
			Command{Code: HeartBeat, Language: LangOther, Opaque: 2}},
		{"unknown language name", `{"code":34,"language":"COBOL","opaque":2}`, Command{Code: HeartBeat, Language: LangOther, Opaque: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeFrame(jsonFrame(tt.hdr, []byte("B")))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Body = []byte("B")
			if err := equalCommands(got, &tt.want); err != nil {
				t.Fatal(err)
			}
			if got.ExtFields == nil && got.Header == nil {
				t.Fatal("ExtFields is nil without a typed header; decoders must return a usable map")
			}
		})
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		buf  []byte
		want error
	}{
		{"short", []byte{0, 0}, ErrTruncated},
		{"header longer than frame", []byte{0, 0, 0, 9, '{', '}'}, ErrMalformed},
		{"unknown serialize type", append([]byte{2, 0, 0, 2}, "{}"...), ErrMalformed},
		{"invalid json", jsonFrame(`{"code":`, nil), ErrMalformed},
		{"ext value object with bad json", jsonFrame(`{"code":1,"extFields":{"a":{]}}`, nil), ErrMalformed},
		{"code out of range", jsonFrame(`{"code":70000}`, nil), ErrMalformed},
		{"binary header too short", append([]byte{1, 0, 0, 3}, 1, 2, 3), ErrMalformed},
		{"binary remark overruns", func() []byte {
			h := make([]byte, 21)
			binary.BigEndian.PutUint32(h[13:], 100)
			return append([]byte{1, 0, 0, 21}, h...)
		}(), ErrMalformed},
		{"binary ext overruns", func() []byte {
			h := make([]byte, 21)
			binary.BigEndian.PutUint32(h[17:], 5)
			return append([]byte{1, 0, 0, 21}, h...)
		}(), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeFrame(tt.buf)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReadCommandLimits(t *testing.T) {
	frame, _ := (&Command{Code: 1, Body: make([]byte, 100)}).Encode()
	if _, err := ReadCommand(bytes.NewReader(frame), 50); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("over limit: %v", err)
	}
	if _, err := ReadCommand(bytes.NewReader([]byte{0, 0, 0, 3, 0, 0, 0}), 0); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("length below 4: %v", err)
	}
	if _, err := ReadCommand(bytes.NewReader(frame[:20]), 0); err == nil {
		t.Fatal("truncated frame decoded")
	}
	if _, err := (&Command{SerializeType: 9}).Encode(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("unknown serialize type encoded: %v", err)
	}
}

func benchCommand() *Command {
	return &Command{Code: PullMessage, Language: LangGo, Version: VersionV4_5_2, Opaque: 1, ExtFields: pullExt()}
}

func BenchmarkEncodeCommand(b *testing.B) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		b.Run(fmt.Sprintf("type%d", st), func(b *testing.B) {
			cmd := benchCommand()
			cmd.SerializeType = st
			cmd.Body = make([]byte, 1024)
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if buf, err = cmd.AppendFrame(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
		b.Run(fmt.Sprintf("type%d", st), func(b *testing.B) {
			cmd := benchCommand()
			cmd.SerializeType = st
			cmd.Body = make([]byte, 1024)
			frame, err := cmd.Encode()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeFrame(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
