package protocol

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestTideHeadersRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    Header
		back Header
		want map[string]string
	}{
		{"force", &HalfActionRequestHeader{TranStateTableOffset: 7, CommitOrRollback: SysFlagTxRollback, Operator: "ops"},
			&HalfActionRequestHeader{}, map[string]string{"tranStateTableOffset": "7", "commitOrRollback": "12", "operator": "ops"}},
		{"resume", &HalfActionRequestHeader{TranStateTableOffset: 0}, &HalfActionRequestHeader{},
			map[string]string{"tranStateTableOffset": "0"}},
		{"recall", &RecallTimerRequestHeader{Handle: "AC1100"}, &RecallTimerRequestHeader{}, map[string]string{"handle": "AC1100"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext := tt.h.Encode()
			if !reflect.DeepEqual(ext, tt.want) {
				t.Fatalf("Encode = %v, want %v", ext, tt.want)
			}
			if err := tt.back.Decode(ext); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tt.back, tt.h) {
				t.Fatalf("Decode = %+v, want %+v", tt.back, tt.h)
			}
		})
	}
	var h HalfActionRequestHeader
	if err := h.Decode(map[string]string{"operator": "x"}); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing tranStateTableOffset: %v", err)
	}
	if err := h.Decode(map[string]string{"tranStateTableOffset": "x"}); !errors.Is(err, ErrBadField) {
		t.Errorf("bad tranStateTableOffset: %v", err)
	}
	var r RecallTimerRequestHeader
	if err := r.Decode(nil); !errors.Is(err, ErrMissingField) {
		t.Errorf("missing handle: %v", err)
	}
}

func TestTideBodiesRoundTrip(t *testing.T) {
	at := time.UnixMilli(1700000000123).UTC()
	hs := []HalfMessage{{QueueOffset: 3, CommitLogOffset: 99, ProducerGroup: "pg", Topic: "t", MsgID: "id", StoreTime: at, Checks: 2, NextCheck: at, Parked: true}}
	back, err := DecodeHalfMessages(EncodeHalfMessages(hs))
	if err != nil || !reflect.DeepEqual(back, hs) {
		t.Fatalf("half messages = %+v, %v", back, err)
	}
	if got := string(EncodeHalfMessages(nil)); got != "[]" {
		t.Errorf("no half messages encode as %s", got)
	}
	st := &HAStatus{BrokerName: "b", Role: "ASYNC_MASTER", MaxPhyOffset: 10,
		Server: &HAServerStatus{Addr: ":1", Slaves: []HASlaveStatus{{Addr: "s", Ready: true, LagTime: time.Second, LastAck: at}}}}
	gst, err := DecodeHAStatus(st.Encode())
	if err != nil || !reflect.DeepEqual(gst, st) {
		t.Fatalf("ha status = %+v, %v", gst, err)
	}
	md, err := DecodeBrokerMetadata((&BrokerMetadata{}).Encode())
	if err != nil || md.Offsets == nil || md.DelayOffsets == nil || md.Topics.TopicConfigTable == nil || md.Groups.SubscriptionGroupTable == nil {
		t.Fatalf("empty metadata = %+v, %v", md, err)
	}
	if b := (&BrokerMetadata{}).Encode(); bytes.Contains(b, []byte("timerCheckpoint")) {
		t.Errorf("metadata without a timer checkpoint encodes the key: %s", b)
	}
	cp := []byte{'T', 'T', 'C', 'K', 0, 0xff, 1}
	md, err = DecodeBrokerMetadata((&BrokerMetadata{TimerCheckpoint: cp}).Encode())
	if err != nil || !bytes.Equal(md.TimerCheckpoint, cp) {
		t.Fatalf("timer checkpoint = %x, %v, want %x", md.TimerCheckpoint, err, cp)
	}
	for _, bad := range []string{"{", "[1]"} {
		if _, err := DecodeHalfMessages([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeHalfMessages(%s) = %v", bad, err)
		}
		if _, err := DecodeHAStatus([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeHAStatus(%s) = %v", bad, err)
		}
	}
}

func TestSystemTopicNames(t *testing.T) {
	if RetryTopic("g") != "%RETRY%g" || DLQTopic("g") != "%DLQ%g" {
		t.Fatal(RetryTopic("g"), DLQTopic("g"))
	}
}
