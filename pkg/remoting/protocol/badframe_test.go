package protocol

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rawFrame builds a frame from a header word's parts and raw bytes.
func rawFrame(st byte, hdrLen int, rest []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+len(rest)))
	b = binary.BigEndian.AppendUint32(b, uint32(st)<<24|uint32(hdrLen))
	return append(b, rest...)
}

func TestSalvageHeader(t *testing.T) {
	tests := []struct {
		name   string
		frame  []byte
		opaque int32
		flag   int32
		ok     bool
	}{
		{"json", rawFrame(0, 30, []byte(`{"flag" : 2, "opaque":-17,xx`)), -17, 2, true},
		{"json no flag", rawFrame(0, 12, []byte(`{"opaque":9}`)), 9, 0, true},
		{"json opaque overflow", rawFrame(0, 22, []byte(`{"opaque":99999999999}`)), 0, 0, false},
		{"json opaque not a number", rawFrame(0, 15, []byte(`{"opaque":"9"}`)), 0, 0, false},
		{"json key as value", rawFrame(0, 20, []byte(`{"x":"opaque","a":1}`)), 0, 0, false},
		{"no header", []byte{0, 0, 0}, 0, 0, false},
		{"binary short", rawFrame(1, 12, make([]byte, 12)), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := tt.frame
			if len(buf) >= 4 {
				buf = buf[4:]
			}
			op, flag, _, ok := SalvageHeader(buf)
			if ok != tt.ok || op != tt.opaque || flag != tt.flag {
				t.Fatalf("got %d %d %v, want %d %d %v", op, flag, ok, tt.opaque, tt.flag, tt.ok)
			}
		})
	}
}

func TestInspectBadFrame(t *testing.T) {
	binary13 := func(opaque, flag int32) []byte { // a binary header cut short after its flag
		f, err := (&Command{Code: SendMessage, Opaque: opaque, Flag: flag, SerializeType: SerializeRocketMQ}).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return rawFrame(SerializeRocketMQ, 13, f[8:8+13])
	}
	derr := errors.New("broken")
	tests := []struct {
		name                 string
		frame                []byte
		ok, response, oneway bool
		opaque               int32
		st                   byte
	}{
		{"json request", rawFrame(0, 33, []byte(`{"code":10,"opaque":42,"flag":0,]`)), true, false, false, 42, SerializeJSON},
		{"json oneway", rawFrame(0, 33, []byte(`{"code":10,"opaque":43,"flag":2,]`)), true, false, true, 43, SerializeJSON},
		{"json response", rawFrame(0, 33, []byte(`{"code":10,"opaque":44,"flag":1,]`)), true, true, false, 44, SerializeJSON},
		{"oneway response is a response", rawFrame(0, 33, []byte(`{"code":10,"opaque":45,"flag":3,]`)), true, true, false, 45, SerializeJSON},
		{"binary request", binary13(46, 0), true, false, false, 46, SerializeRocketMQ},
		{"binary response", binary13(47, FlagResponse), true, true, false, 47, SerializeRocketMQ},
		{"unknown type answered in json", rawFrame(5, 14, []byte(`{"opaque":48}x`)), true, false, false, 48, SerializeJSON},
		{"no opaque", rawFrame(0, 2, []byte(`[]`)), false, false, false, 0, 0},
		{"http", []byte("GET / HTTP/1.1\r\n"), false, false, false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bf, ok := InspectBadFrame(tt.frame[4:], derr)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, bf)
			}
			if !ok {
				return
			}
			if bf.IsResponse() != tt.response || bf.IsOneway() != tt.oneway || bf.Opaque != tt.opaque || bf.Err != derr {
				t.Fatalf("got %+v response=%v oneway=%v", bf, bf.IsResponse(), bf.IsOneway())
			}
			r := bf.Reply()
			if !r.IsResponse() || r.Code != SystemError || r.Opaque != tt.opaque || r.SerializeType != tt.st ||
				!strings.Contains(r.Remark, "broken") {
				t.Fatalf("reply %+v", r)
			}
			frame, err := r.Encode() // the reply must go on the wire as is
			if err != nil {
				t.Fatal(err)
			}
			if back, err := DecodeFrame(frame[4:]); err != nil || back.Opaque != tt.opaque {
				t.Fatalf("reply decodes as %+v, %v", back, err)
			}
		})
	}
}

func TestCheckFrameLength(t *testing.T) {
	tests := []struct {
		total uint32
		max   int
		ok    bool
	}{
		{4, 100, true}, {100, 100, true}, {101, 100, false}, {3, 100, false}, {0, 100, false},
		{1 << 31, DefaultMaxFrameSize, false}, {DefaultMaxFrameSize, DefaultMaxFrameSize, true},
	}
	for _, tt := range tests {
		err := CheckFrameLength(tt.total, tt.max)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrFrameTooLarge)) {
			t.Errorf("CheckFrameLength(%d, %d) = %v, want ok=%v", tt.total, tt.max, err, tt.ok)
		}
	}
}

func TestCheckHeaderLength(t *testing.T) {
	tests := []struct {
		name string
		buf  []byte
		max  int
		ok   bool
	}{
		{"at the limit", rawFrame(0, 100, nil)[4:], 100, true},
		{"above the limit", rawFrame(0, 101, nil)[4:], 100, false},
		{"binary above the limit", rawFrame(1, 1<<24-1, nil)[4:], 1 << 20, false},
		{"no limit", rawFrame(0, 1<<24-1, nil)[4:], 0, true},
		{"short buffer", []byte{0, 0}, 10, true}, // DecodeFrame reports it
	}
	for _, tt := range tests {
		err := CheckHeaderLength(tt.buf, tt.max)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrHeaderTooLarge)) {
			t.Errorf("%s: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
