package ops

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

func TestParseTime(t *testing.T) {
	local := func(s string) int64 {
		tm, err := time.ParseInLocation("2006-01-02 15:04:05.000", s, time.Local)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1700000000123", 1700000000123},
		{"2024-01-02#03:04:05:006", local("2024-01-02 03:04:05.006")},
		{"2024-01-02T03:04:05Z", time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()},
		{"2024-01-02 03:04:05", local("2024-01-02 03:04:05.000")},
		{"2024-01-02T03:04:05", local("2024-01-02 03:04:05.000")},
		{"2024-01-02T03:04", local("2024-01-02 03:04:00.000")},
	} {
		got, err := ParseTime(c.in)
		if err != nil || got.UnixMilli() != c.want {
			t.Errorf("ParseTime(%q) = %d, %v; want %d", c.in, got.UnixMilli(), err, c.want)
		}
	}
	if got, err := ParseTime(" now "); err != nil || time.Since(got) > time.Minute {
		t.Errorf("now: %v %v", got, err)
	}
	for _, bad := range []string{"", "yesterday", "2024-13-01T00:00", "12:00"} {
		if _, err := ParseTime(bad); !errors.Is(err, ErrBadTime) {
			t.Errorf("ParseTime(%q): %v, want ErrBadTime", bad, err)
		}
	}
}

func TestResend(t *testing.T) {
	dl := &mqclient.MessageExt{Message: mqclient.Message{Topic: "%DLQ%g", Tag: "T", Keys: []string{"k"}, Body: []byte("b"),
		Properties: map[string]string{protocol.PropRetryTopic: "orders", protocol.PropUniqKey: "U1", protocol.PropReconsumeTime: "16",
			"traceparent": "00-x", protocol.PropDelayLevel: "3"}}, MsgID: "U1", OffsetMsgID: "OFF1"}
	if err := CheckDeadLetter(dl, "g"); err != nil {
		t.Fatal(err)
	}
	if err := CheckDeadLetter(dl, "other"); err == nil || !strings.Contains(err.Error(), "not in the dead letter queue of other") {
		t.Fatalf("dead letter of another group: %v", err)
	}
	for _, c := range []struct {
		toOrigin  bool
		target    string
		retryProp string
	}{{false, "%RETRY%g", "orders"}, {true, "orders", ""}} {
		target, err := ResendTarget(dl, "g", c.toOrigin)
		if err != nil || target != c.target {
			t.Fatalf("target (toOrigin %v): %q %v", c.toOrigin, target, err)
		}
		m := ResendCopy(dl, target)
		p := m.Properties
		if m.Topic != c.target || string(m.Body) != "b" || m.Tag != "T" || p[protocol.PropRetryTopic] != c.retryProp ||
			p[protocol.PropOriginMessageID] != "U1" || p[PropResendOf] != "OFF1" || p["traceparent"] != "00-x" ||
			p[protocol.PropUniqKey] != "" || p[protocol.PropReconsumeTime] != "" || p[protocol.PropDelayLevel] != "" {
			t.Fatalf("copy to %s: %+v", target, m)
		}
	}
	delete(dl.Properties, protocol.PropRetryTopic)
	if _, err := ResendTarget(dl, "g", false); !errors.Is(err, ErrNoOrigin) {
		t.Fatalf("no RETRY_TOPIC: %v", err)
	}
}

func TestFieldsOf(t *testing.T) {
	m := &mqclient.MessageExt{Message: mqclient.Message{Topic: "t", Body: []byte("héllo")}, MsgID: "M"}
	if f := FieldsOf(m, 0); f.Body != "héllo" || f.BodyBase64 != "" || f.BodySize != 6 {
		t.Fatalf("text body: %+v", f)
	}
	if f := FieldsOf(m, 2); f.BodyBase64 != "aMM=" || f.Body != "" || f.BodySize != 6 {
		t.Fatalf("body cut inside a rune (not UTF-8 any more): %+v", f)
	}
	m.Body = []byte{0xff, 0x00}
	if f := FieldsOf(m, 0); f.BodyBase64 != "/wA=" {
		t.Fatalf("binary body: %+v", f)
	}
}
