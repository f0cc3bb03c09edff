package protocol

import "testing"

// FuzzSalvageHeader: recovering the opaque of a broken frame must never
// panic, whatever the bytes.
func FuzzSalvageHeader(f *testing.F) {
	f.Add(rawFrame(0, 30, []byte(`{"flag" : 2, "opaque":-17,xx`))[4:])
	f.Add(rawFrame(1, 13, make([]byte, 13))[4:])
	f.Add(rawFrame(0, 500, []byte(`{"opaque":`))[4:])
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		SalvageHeader(buf)
	})
}
