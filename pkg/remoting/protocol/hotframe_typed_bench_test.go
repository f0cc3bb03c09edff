package protocol

import (
	"fmt"
	"testing"
)

// BenchmarkHotFrameEncodeTyped is BenchmarkHotFrameEncode from the typed
// header (Command.Header): no map and, in ROCKETMQ, no string per field.
func BenchmarkHotFrameEncodeTyped(b *testing.B) {
	for _, hf := range hotFrames() {
		for _, st := range []byte{SerializeJSON, SerializeRocketMQ} {
			b.Run(fmt.Sprintf("%s/type%d-typed", hf.name, st), func(b *testing.B) {
				buf := make([]byte, 0, 64<<10)
				b.ReportAllocs()
				for b.Loop() {
					c := Command{Code: hf.code, Language: LangGo, Version: Version, Flag: hf.flag, Header: hf.h.(ExtAppender),
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
