package protocol

import "testing"

// BenchmarkHotFrameEncodeTyped is BenchmarkHotFrameEncode's ROCKETMQ
// path from the typed header (Command.Header): no map, no string per
// field.
func BenchmarkHotFrameEncodeTyped(b *testing.B) {
	for _, hf := range hotFrames() {
		b.Run(hf.name+"/type1-typed", func(b *testing.B) {
			buf := make([]byte, 0, 64<<10)
			b.ReportAllocs()
			for b.Loop() {
				c := Command{Code: hf.code, Language: LangGo, Version: Version, Flag: hf.flag, Header: hf.h.(ExtAppender),
					Body: hf.body, SerializeType: SerializeRocketMQ}
				var err error
				if buf, err = c.AppendFrame(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
