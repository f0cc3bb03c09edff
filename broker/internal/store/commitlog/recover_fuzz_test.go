package commitlog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidemq/tide/broker/internal/store/segment"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// FuzzRecover feeds arbitrary segment contents to recovery and the record
// decoder: it must never panic, must end on a record boundary inside the
// data, and everything before the end must decode with a valid CRC.
func FuzzRecover(f *testing.F) {
	r1 := record(f, "hello")
	setPhy(0, r1)
	r2 := record(f, "world, a longer body")
	setPhy(int64(len(r1)), r2)
	two := append(append([]byte(nil), r1...), r2...)
	f.Add(two)
	f.Add(r1[:50])
	f.Add(append(append([]byte(nil), r1...), protocol.AppendBlank(nil, 8)...))
	bad := append([]byte(nil), two...)
	bad[len(r1)+90] ^= 1
	f.Add(bad)
	f.Add([]byte{0, 0, 0, 91, 0xda, 0xa3, 0x20, 0xa7})
	f.Fuzz(func(t *testing.T, data []byte) {
		const size = 4096
		if len(data) > size {
			data = data[:size]
		}
		// The decoders alone.
		protocol.ViewRecord(data, true)
		protocol.DecodeStored(data, true)
		protocol.DecodeMessages(data)

		dir := t.TempDir()
		p := filepath.Join(dir, segment.Name(0))
		buf := make([]byte, size)
		copy(buf, data)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(Options{Dir: dir, FileSize: size})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		res, err := l.Recover(0, true)
		if err != nil {
			t.Fatal(err)
		}
		if res.End < 0 || res.End > size {
			t.Fatalf("end %d", res.End)
		}
		seg := l.Segments()[0].Data()
		for pos := int64(0); pos < res.End; {
			v, err := protocol.ViewRecord(seg[pos:res.End], true)
			if err == protocol.ErrBlank || (err != nil && v.Size > 0 && pos+int64(v.Size) == size) {
				break
			}
			if err != nil {
				t.Fatalf("invalid data before the recovered end at %d: %v", pos, err)
			}
			pos += int64(v.Size)
		}
		if _, err := l.Append(record(t, "after"), setPhy); err != nil && res.End+8+100 < size {
			t.Fatalf("append after recovery: %v", err)
		}
	})
}
