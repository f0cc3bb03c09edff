package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// idempotentGoldens pins the wire bytes of TideInitProducerID and of a
// stamped send (testdata/frames/<name>.bin; -update rewrites them).
func idempotentGoldens() []struct {
	name string
	cmd  *Command
} {
	stamped := map[string]string{PropUniqKey: "7F0000010001000000000000000000A1", PropProducerStamp: ProducerStamp{ProducerID: 4611686018427387905, Epoch: 1733090000123, Sequence: 17}.String()}
	send := &SendMessageRequestHeaderV2{ProducerGroup: "pg", Topic: "t", DefaultTopic: DefaultTopicTemplate, DefaultTopicQueueNums: 4,
		QueueID: 1, BornTimestamp: 1733090000200, Properties: EncodeProperties(stamped), MaxReconsumeTimes: -1}
	return []struct {
		name string
		cmd  *Command
	}{
		{"tide_init_producer_id_request", &Command{Code: TideInitProducerID, Language: LangGo, Version: Version, Opaque: 11,
			ExtFields: (&InitProducerIDRequestHeader{ProducerGroup: "orders", InstanceName: "orders-1"}).Encode()}},
		{"tide_init_producer_id_response", &Command{Code: Success, Language: LangGo, Version: Version, Opaque: 11, Flag: FlagResponse,
			ExtFields: (&InitProducerIDResponseHeader{ProducerID: 4611686018427387905, Epoch: 1733090000123}).Encode()}},
		{"tide_producer_fenced_response", &Command{Code: TideProducerFenced, Language: LangGo, Version: Version, Opaque: 12, Flag: FlagResponse,
			Remark: "producer 4611686018427387905 epoch 1 is fenced by epoch 2", ExtFields: map[string]string{}}},
		{"tide_stamped_send_request", &Command{Code: SendMessageV2, Language: LangGo, Version: Version, Opaque: 12,
			ExtFields: send.Encode(), Body: []byte("hello")}},
	}
}

func TestIdempotentGolden(t *testing.T) {
	for _, g := range idempotentGoldens() {
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

func TestProducerStamp(t *testing.T) {
	tests := []struct {
		in      string
		want    ProducerStamp
		wantErr bool
	}{
		{"1:0:0", ProducerStamp{1, 0, 0}, false},
		{"4611686018427387905:1733090000123:17", ProducerStamp{4611686018427387905, 1733090000123, 17}, false},
		{"", ProducerStamp{}, true},
		{"1:2", ProducerStamp{}, true},
		{"1:2:3:4", ProducerStamp{}, true},
		{"0:1:1", ProducerStamp{}, true},
		{"1:-1:1", ProducerStamp{}, true},
		{"1:1:x", ProducerStamp{}, true},
		{"1:1:99999999999999999999", ProducerStamp{}, true},
	}
	for _, tt := range tests {
		got, err := ParseProducerStamp(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrBadField) {
				t.Errorf("ParseProducerStamp(%q) err = %v, want ErrBadField", tt.in, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseProducerStamp(%q) = %+v, %v", tt.in, got, err)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("String() = %q, want %q", s, tt.in)
		}
	}
}

func TestInitProducerIDHeaders(t *testing.T) {
	req := &InitProducerIDRequestHeader{ProducerGroup: "g", InstanceName: "i"}
	var backReq InitProducerIDRequestHeader
	if err := backReq.Decode(req.Encode()); err != nil || !reflect.DeepEqual(&backReq, req) {
		t.Fatalf("request round trip = %+v, %v", backReq, err)
	}
	if err := backReq.Decode(map[string]string{"instanceName": "i"}); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing producerGroup: %v", err)
	}
	if got := (&InitProducerIDRequestHeader{ProducerGroup: "g"}).Encode(); !reflect.DeepEqual(got, map[string]string{"producerGroup": "g"}) {
		t.Errorf("no instance encodes %v", got)
	}
	resp := &InitProducerIDResponseHeader{ProducerID: 5, Epoch: 0}
	var backResp InitProducerIDResponseHeader
	if err := backResp.Decode(resp.Encode()); err != nil || backResp != *resp {
		t.Fatalf("response round trip = %+v, %v", backResp, err)
	}
	if err := backResp.Decode(map[string]string{"producerId": "0", "epoch": "1"}); !errors.Is(err, ErrBadField) {
		t.Errorf("producer id 0: %v", err)
	}
	if err := backResp.Decode(map[string]string{"producerId": "3"}); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing epoch: %v", err)
	}
}

func FuzzParseProducerStamp(f *testing.F) {
	for _, s := range []string{"1:0:0", "4611686018427387905:1733090000123:17", "", "::", "1:2:3:4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		s, err := ParseProducerStamp(v)
		if err != nil {
			return
		}
		back, err := ParseProducerStamp(s.String())
		if err != nil || back != s {
			t.Fatalf("%q parsed to %+v, which round-trips to %+v, %v", v, s, back, err)
		}
	})
}

func TestStampPropertyAndBatchItem(t *testing.T) {
	st := ProducerStamp{ProducerID: 1<<63 - 1, Epoch: 1<<63 - 1, Sequence: 1<<63 - 1}
	sp := AppendStampProperty(nil, st)
	if len(sp) != MaxStampPropertyLen {
		t.Errorf("the longest stamp property has %d bytes, MaxStampPropertyLen %d", len(sp), MaxStampPropertyLen)
	}
	props := EncodeProperties(map[string]string{PropUniqKey: "u1", PropTags: "t"})
	body := AppendBatchItem(nil, 3, []byte("hi"), props, sp)
	if len(body) != BatchItemLen(2, len(props)+len(sp)) {
		t.Errorf("item of %d bytes, BatchItemLen says %d", len(body), BatchItemLen(2, len(props)+len(sp)))
	}
	items, err := DecodeBatch(body)
	if err != nil || len(items) != 1 {
		t.Fatalf("DecodeBatch: %v %v", items, err)
	}
	p := DecodeProperties(items[0].Properties)
	if p[PropUniqKey] != "u1" || p[PropTags] != "t" || p[PropProducerStamp] != st.String() || items[0].Flag != 3 || string(items[0].Body) != "hi" {
		t.Errorf("item %+v properties %q", items[0], p)
	}
}
