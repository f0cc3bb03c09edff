package protocol

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeFrame feeds DecodeFrame arbitrary frames (without the length
// prefix). It must never panic, and whatever it accepts must re-encode to a
// frame that decodes to the same command.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(jsonFrame(pullHeaderJSON, nil))
	f.Add(jsonFrame(javaResponseJSON, []byte("body")))
	f.Add(jsonFrame(`{"code":11,"extFields":{"queueId":3,"ok":true,"n":null},"language":7,"opaque":4,"remark":null}`, nil))
	f.Add([]byte{0, 0, 0, 9, '{', '}'})
	f.Add([]byte{1, 0, 0, 21, 0, 10, 9, 1, 61, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	// ROCKETMQ binary headers of every hot header, as pkg/mqclient and
	// the broker write them from the typed headers.
	for _, tt := range extAppenderCases() {
		c := &Command{Code: SendMessageV2, Language: LangGo, Version: Version, Opaque: 3, Header: tt.h, SerializeType: SerializeRocketMQ,
			ExtFields: map[string]string{ExtAccessKey: "ak"}, Body: []byte("b")}
		b, err := c.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[4:])
	}
	paths, _ := filepath.Glob(filepath.Join("testdata", "frames", "*.bin"))
	if len(paths) == 0 {
		f.Fatal("no golden frames to seed from")
	}
	// Frames recorded from rocketmq-client-go v2.1.2, when present.
	recorded, _ := filepath.Glob(filepath.Join("testdata", "client-v2.1.2", "*.bin"))
	for _, p := range append(paths, recorded...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 4 {
			f.Add(b[4:])
		}
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		cmd, err := DecodeFrame(buf)
		if err != nil {
			return
		}
		frame, err := cmd.Encode()
		if err != nil {
			t.Fatalf("decoded command does not encode: %v (%+v)", err, cmd)
		}
		back, err := DecodeFrame(frame[4:])
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n%q", err, frame)
		}
		if err := equalCommands(back, cmd); err != nil {
			t.Fatal(err)
		}
	})
}
