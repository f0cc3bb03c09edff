package ha

import (
	"net/netip"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func record(t testing.TB, body string) []byte {
	m := &protocol.MessageExt{BornHost: netip.MustParseAddrPort("1.2.3.4:5"), StoreHost: netip.MustParseAddrPort("1.2.3.4:6")}
	m.Topic, m.Body = "T", []byte(body)
	b, err := protocol.AppendStored(nil, m, "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWholeRecords(t *testing.T) {
	a, b := record(t, "aaaa"), record(t, "bbbbbbbb")
	ab := append(append([]byte{}, a...), b...)
	blank := protocol.AppendBlank(nil, 64)
	tests := []struct {
		name      string
		in        []byte
		n, need   int
		wantWhole bool
	}{
		{name: "empty", in: nil},
		{name: "two whole records", in: ab, n: len(ab)},
		{name: "cut inside the second", in: ab[:len(ab)-3], n: len(a)},
		{name: "first record longer than the chunk", in: a[:20], need: len(a)},
		{name: "record then blank filler and zeros", in: append(append(append([]byte{}, a...), blank...), make([]byte, 56)...), n: len(a) + 64},
		{name: "zeros", in: make([]byte, 100)},
		{name: "garbage after a record", in: append(append([]byte{}, a...), 1, 2, 3, 4, 5, 6, 7, 8, 9), n: len(a)},
		{name: "short tail", in: append(append([]byte{}, a...), 1, 2), n: len(a)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, need := wholeRecords(tc.in)
			if n != tc.n || need != tc.need {
				t.Fatalf("wholeRecords = (%d, %d), want (%d, %d)", n, need, tc.n, tc.need)
			}
		})
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	b := appendHeader(nil, 1<<40+5, 32<<10)
	off, size, err := decodeHeader(b, maxFrameBody)
	if err != nil || off != 1<<40+5 || size != 32<<10 {
		t.Fatalf("decodeHeader = %d, %d, %v", off, size, err)
	}
	if got := decodeReport(appendReport(nil, 123456789)); got != 123456789 {
		t.Fatalf("report = %d", got)
	}
	if _, _, err := decodeHeader(b[:11], maxFrameBody); err == nil {
		t.Fatal("short header accepted")
	}
	if _, _, err := decodeHeader(appendHeader(nil, -1, 0), maxFrameBody); err == nil {
		t.Fatal("negative offset accepted")
	}
}

// FuzzWholeRecords: any bytes give a prefix length within the input, a
// need only when nothing is whole, and never a panic.
func FuzzWholeRecords(f *testing.F) {
	a := record(f, "hello")
	f.Add(a)
	f.Add(append(append([]byte{}, a...), a[:30]...))
	f.Add(protocol.AppendBlank(nil, 100))
	f.Add(make([]byte, 16))
	f.Add([]byte{0, 0, 0, 100, 0xda, 0xa3, 0x20, 0xa7})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, need := wholeRecords(b)
		if n < 0 || n > len(b) {
			t.Fatalf("n = %d for %d bytes", n, len(b))
		}
		if need != 0 && (n != 0 || need <= len(b)) {
			t.Fatalf("need = %d with n = %d for %d bytes", need, n, len(b))
		}
	})
}

// FuzzDecodeHeader: a decoded header is always within bounds.
func FuzzDecodeHeader(f *testing.F) {
	f.Add(appendHeader(nil, 0, 0))
	f.Add(appendHeader(nil, 1<<30, 32<<10))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		off, size, err := decodeHeader(b, 1<<20)
		if err == nil && (off < 0 || size < 0 || size > 1<<20) {
			t.Fatalf("decodeHeader(%x) = %d, %d", b, off, size)
		}
	})
}
