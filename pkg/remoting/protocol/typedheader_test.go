package protocol

import (
	"crypto/hmac"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeMapPath is DecodeFrame without the typed request headers: the
// reference the typed decoding must agree with.
func decodeMapPath(frame []byte) (*Command, error) {
	saved := typedHeaders
	typedHeaders = false
	defer func() { typedHeaders = saved }()
	return DecodeFrame(frame)
}

// checkTyped fails unless DecodeFrame of frame gives what the map path
// gives: the same command with all its fields (Fields), and from
// DecodeSendRequest (send codes) or DecodePullRequest (PULL_MESSAGE) the
// same header or error as the header's Decode of the map. It reports
// whether the header was typed.
func checkTyped(t *testing.T, frame []byte) (typed bool) {
	t.Helper()
	got, err := DecodeFrame(frame)
	want, werr := decodeMapPath(frame)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%q: typed decode error %v, map path %v", frame, err, werr)
	}
	if err != nil {
		return false
	}
	if want.Header != nil || want.typedHeader {
		t.Fatalf("map path typed the header: %#v", want)
	}
	if !reflect.DeepEqual(asMap(got), want) {
		t.Fatalf("%q:\n typed %#v\n map   %#v", frame, asMap(got), want)
	}
	if got.Header != nil && newTypedHeader(got.Code) == nil {
		t.Fatalf("code %d typed: %#v", got.Code, got)
	}
	// The ACL signs and reads a typed command without its map.
	for _, skip := range [][]string{nil, {"_UNIQUE_KEY_QUERY", ""}, {"topic", "b", ExtAccessKey, "zz"}} {
		if !hmac.Equal(got.FieldsMAC([]byte("sk"), skip...), SignatureMAC(want.ExtFields, want.Body, []byte("sk"), skip...)) {
			t.Fatalf("%q: FieldsMAC (skip %q) differs from SignatureMAC of the map", frame, skip)
		}
	}
	for _, k := range []string{ExtAccessKey, ExtSignature, "topic", "b", "queueId", ""} {
		gv, gok := got.Field(k)
		wv, wok := want.ExtFields[k]
		if gv != wv || gok != wok {
			t.Fatalf("%q: Field(%q) = %q %v, map %q %v", frame, k, gv, gok, wv, wok)
		}
	}
	var gh, wh any
	var gerr, werr2 error
	switch {
	case got.Code == PullMessage:
		gh, gerr = DecodePullRequest(got)
		var h PullMessageRequestHeader
		if werr2 = h.Decode(want.ExtFields); werr2 == nil {
			wh = &h
		}
	case newTypedHeader(got.Code) != nil:
		gh, gerr = DecodeSendRequest(got)
		wh, werr2 = DecodeSendHeader(want.Code, want.ExtFields)
	default:
		return false
	}
	if (gerr == nil) != (werr2 == nil) || gerr != nil && gerr.Error() != werr2.Error() {
		t.Fatalf("%q: typed header error %v, map's %v", frame, gerr, werr2)
	}
	if gerr == nil && !reflect.DeepEqual(gh, wh) {
		t.Fatalf("%q:\n typed header %+v\n map header   %+v", frame, gh, wh)
	}
	if got.Header != nil && gerr != nil {
		t.Fatalf("typed a header that does not decode: %v", gerr)
	}
	return got.Header != nil
}

// officialSendExt is the ext object of the official client's single send
// (testdata/client-v2.1.2/10-send-message.bin) with %s for one more field.
const officialSendJSON = `{"code":10,"language":"GO","version":317,"opaque":43,"flag":0,"remark":"","extFields":{"batch":"false",` +
	`"properties":"color\u0001blue\u0002TAGS\u0001TagA\u0002","producerGroup":"pg","topic":"TopicTest","sysFlag":"0",` +
	`"bornTimestamp":"1796045358404","flag":"0","reconsumeTimes":"0","unitMode":"false","defaultTopic":"TBW102","queueId":"1",` +
	`"maxReconsumeTimes":"0","defaultTopicQueueNums":"4"}}`

func TestTypedSendHeaderJSON(t *testing.T) {
	tests := []struct {
		name  string
		hdr   string
		typed bool
	}{
		{"official client", officialSendJSON, true},
		{"ACL fields kept beside", strings.Replace(officialSendJSON, `"batch"`, `"AccessKey":"ak","Signature":"s=","batch"`, 1), true},
		{"bname set", strings.Replace(officialSendJSON, `"batch"`, `"bname":"broker-a","batch"`, 1), true},
		{"maxReconsumeTimes absent", strings.Replace(officialSendJSON, `,"maxReconsumeTimes":"0"`, ``, 1), true},
		{"short names", `{"code":310,"flag":0,"extFields":{"a":"pg","b":"t","c":"TBW102","d":"4","e":"-1","f":"0","g":"-9223372036854775808",` +
			`"h":"0","i":"","j":"0","k":"true","m":"false"}}`, true},
		{"batch code", `{"code":320,"flag":0,"extFields":{"a":"pg","b":"t","c":"TBW102","d":"4","e":"0","f":"0","g":"1","h":"0","i":"",` +
			`"j":"0","k":"false","l":"16","m":"true","n":"b"}}`, true},
		{"reply", strings.Replace(officialSendJSON, `"code":10`, `"code":324`, 1), true},
		{"plus sign", strings.Replace(officialSendJSON, `"queueId":"1"`, `"queueId":"+1"`, 1), false},
		{"leading zero", strings.Replace(officialSendJSON, `"queueId":"1"`, `"queueId":"01"`, 1), false},
		{"minus zero", strings.Replace(officialSendJSON, `"sysFlag":"0"`, `"sysFlag":"-0"`, 1), false},
		{"int32 overflow", strings.Replace(officialSendJSON, `"queueId":"1"`, `"queueId":"2147483648"`, 1), false},
		{"not a number", strings.Replace(officialSendJSON, `"flag":"0"`, `"flag":"x"`, 1), false},
		{"empty number", strings.Replace(officialSendJSON, `"reconsumeTimes":"0"`, `"reconsumeTimes":""`, 1), false},
		{"bool spelling", strings.Replace(officialSendJSON, `"unitMode":"false"`, `"unitMode":"False"`, 1), false},
		{"batch absent", strings.Replace(officialSendJSON, `"batch":"false",`, ``, 1), false},
		{"required absent", strings.Replace(officialSendJSON, `"producerGroup":"pg",`, ``, 1), false},
		{"required empty", strings.Replace(officialSendJSON, `"topic":"TopicTest"`, `"topic":""`, 1), false},
		{"negative maxReconsumeTimes", strings.Replace(officialSendJSON, `"maxReconsumeTimes":"0"`, `"maxReconsumeTimes":"-1"`, 1), false},
		{"empty bname", strings.Replace(officialSendJSON, `"batch"`, `"bname":"","batch"`, 1), false},
		{"duplicate field", strings.Replace(officialSendJSON, `"batch":"false"`, `"batch":"true","batch":"false"`, 1), false},
		{"escaped key", strings.Replace(officialSendJSON, `"topic"`, `"t\u006fpic"`, 1), true},
		{"other naming", strings.Replace(officialSendJSON, `"code":10`, `"code":310`, 1), false},
		{"response flag", strings.Replace(officialSendJSON, `"flag":0`, `"flag":1`, 1), false},
		{"flag after ext (fastjson order)", strings.Replace(officialSendJSON, `"flag":0,`, ``, 1)[:len(officialSendJSON)-len(`"flag":0,`)-1] + `,"flag":0}`, false},
		{"code again after ext", officialSendJSON[:len(officialSendJSON)-1] + `,"code":11}`, false},
		{"two extFields", officialSendJSON[:len(officialSendJSON)-1] + `,"extFields":{"x":"y"}}`, false},
		{"not a send", strings.Replace(officialSendJSON, `"code":10`, `"code":11`, 1), false},
		{"non-string value", strings.Replace(officialSendJSON, `"queueId":"1"`, `"queueId":1`, 1), false},
		{"malformed", officialSendJSON[:len(officialSendJSON)-2], false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkTyped(t, jsonFrame(tc.hdr, []byte("body"))); got != tc.typed {
				t.Errorf("typed %v, want %v", got, tc.typed)
			}
		})
	}
}

// officialPullJSON is the official client's PULL_MESSAGE header
// (testdata/client-v2.1.2/11-pull.bin).
const officialPullJSON = `{"code":11,"language":"GO","version":317,"opaque":10,"flag":0,"remark":"","extFields":{"queueOffset":"0",` +
	`"maxMsgNums":"32","sysFlag":"2","commitOffset":"-1","suspendTimeoutMillis":"20000","subVersion":"0","expressionType":"TAG",` +
	`"consumerGroup":"cg","queueId":"0","subscription":"","topic":"%RETRY%cg"}}`

func TestTypedPullHeaderJSON(t *testing.T) {
	tests := []struct {
		name  string
		hdr   string
		typed bool
	}{
		{"official client", officialPullJSON, true},
		{"ACL fields kept beside", strings.Replace(officialPullJSON, `"queueOffset"`, `"AccessKey":"ak","Signature":"s=","queueOffset"`, 1), true},
		{"subscription set", strings.Replace(officialPullJSON, `"subscription":""`, `"subscription":"TagA || TagB"`, 1), true},
		{"subscription absent", strings.Replace(officialPullJSON, `,"subscription":""`, ``, 1), false},
		{"expressionType absent", strings.Replace(officialPullJSON, `"expressionType":"TAG",`, ``, 1), false},
		{"required empty", strings.Replace(officialPullJSON, `"consumerGroup":"cg"`, `"consumerGroup":""`, 1), false},
		{"required absent", strings.Replace(officialPullJSON, `"subVersion":"0",`, ``, 1), false},
		{"plus sign", strings.Replace(officialPullJSON, `"sysFlag":"2"`, `"sysFlag":"+2"`, 1), false},
		{"minus zero", strings.Replace(officialPullJSON, `"queueOffset":"0"`, `"queueOffset":"-0"`, 1), false},
		{"int32 overflow", strings.Replace(officialPullJSON, `"maxMsgNums":"32"`, `"maxMsgNums":"4294967296"`, 1), false},
		{"int64 extreme", strings.Replace(officialPullJSON, `"commitOffset":"-1"`, `"commitOffset":"-9223372036854775808"`, 1), true},
		{"duplicate field", strings.Replace(officialPullJSON, `"topic":"%RETRY%cg"`, `"topic":"a","topic":"%RETRY%cg"`, 1), false},
		{"response flag", strings.Replace(officialPullJSON, `"flag":0`, `"flag":1`, 1), false},
		{"send field names", strings.Replace(officialPullJSON, `"code":11`, `"code":10`, 1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := checkTyped(t, jsonFrame(tc.hdr, []byte("body"))); got != tc.typed {
				t.Errorf("typed %v, want %v", got, tc.typed)
			}
		})
	}
}

// TestDecodeRequestHeaderBuiltHeader: a header a caller put in Command
// (not typed by DecodeFrame) is decoded from its fields, as Decode of
// the map would, so an invalid one is refused the same way.
func TestDecodeRequestHeaderBuiltHeader(t *testing.T) {
	bad := NewTypedRequest(PullMessage, &PullMessageRequestHeader{Topic: "t"}, nil)
	if _, err := DecodePullRequest(bad); !errors.Is(err, ErrMissingField) {
		t.Errorf("pull without consumerGroup: %v, want ErrMissingField", err)
	}
	send := NewTypedRequest(SendMessage, &SendMessageRequestHeader{ProducerGroup: "p", Topic: "t"}, nil)
	if _, err := DecodeSendRequest(send); !errors.Is(err, ErrMissingField) {
		t.Errorf("send without defaultTopic: %v, want ErrMissingField", err)
	}
	good := &PullMessageRequestHeader{ConsumerGroup: "g", Topic: "t", MaxMsgNums: 32, Subscription: "*"}
	h, err := DecodePullRequest(NewTypedRequest(PullMessage, good, nil))
	if err != nil || !reflect.DeepEqual(h, good) || h == good {
		t.Errorf("built pull header: %+v %v (same pointer %v)", h, err, h == good)
	}
}

// TestTypedSendHeaderFrames: the official client's recorded sends and
// pulls and the binary ones pkg/mqclient writes are typed; everything
// recorded decodes as with the map.
func TestTypedSendHeaderFrames(t *testing.T) {
	typed := map[string]bool{"10-send-message": true, "10-send-message-half": true, "320-send-batch-message": true,
		"324-send-reply-message": true, "send_v2_request_binary": true, "tide_stamped_send_request": true,
		"11-pull": true, "pull_request_binary": true, "pull_request_json": true}
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	frames, _ := filepath.Glob(filepath.Join("testdata", "frames", "*.bin"))
	for _, f := range append(files, frames...) {
		name := strings.TrimSuffix(filepath.Base(f), ".bin")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := checkTyped(t, raw[4:]); got != typed[name] {
			t.Errorf("%s: typed %v, want %v", name, got, typed[name])
		}
	}
}

// TestTypedSendHeaderBinary: ROCKETMQ and JSON headers of every typed
// code, typed (when the header is the code's type) and re-encoded.
func TestTypedSendHeaderBinary(t *testing.T) {
	for _, code := range []int16{SendMessage, SendMessageV2, SendBatchMessage, SendReplyMessage, SendReplyMessageV2, PullMessage} {
		for _, tt := range extAppenderCases() {
			for _, st := range []byte{SerializeRocketMQ, SerializeJSON} {
				c := &Command{Code: code, Language: LangGo, Version: Version, Opaque: 3, Header: tt.h, SerializeType: st,
					ExtFields: map[string]string{ExtAccessKey: "ak"}, Body: []byte("b")}
				frame, err := c.Encode()
				if err != nil {
					t.Fatal(err)
				}
				typed := checkTyped(t, frame[4:])
				if want := reflect.TypeOf(tt.h) == reflect.TypeOf(newTypedHeader(code)); typed != want {
					t.Errorf("code %d, %s, type %d: typed %v, want %v", code, tt.name, st, typed, want)
				}
			}
		}
	}
}

// TestCommandExtReadsHeader: Ext and Fields see a typed header's fields.
func TestCommandExtReadsHeader(t *testing.T) {
	c, err := DecodeFrame(jsonFrame(strings.Replace(officialSendJSON, `"batch"`, `"AccessKey":"ak","batch"`, 1), nil))
	if err != nil || c.Header == nil {
		t.Fatalf("not typed: %v %#v", err, c)
	}
	if c.Ext("topic") != "TopicTest" || c.Ext("queueId") != "1" || c.Ext(ExtAccessKey) != "ak" || c.Ext("nope") != "" {
		t.Errorf("Ext: topic %q queueId %q AccessKey %q", c.Ext("topic"), c.Ext("queueId"), c.Ext(ExtAccessKey))
	}
	if f := c.Fields(); len(f) != 14 || f["producerGroup"] != "pg" || f[ExtAccessKey] != "ak" {
		t.Errorf("Fields %v", f)
	}
}

// FuzzTypedSendHeader is the differential test of the typed send header
// decoding: for any frame, DecodeFrame gives what the map path gives.
func FuzzTypedSendHeader(f *testing.F) {
	f.Add(jsonFrame(officialSendJSON, []byte("body")))
	f.Add(jsonFrame(strings.Replace(officialSendJSON, `"batch"`, `"AccessKey":"ak","bname":"b","batch"`, 1), nil))
	f.Add(jsonFrame(strings.Replace(officialSendJSON, `"queueId":"1"`, `"queueId":"+1"`, 1), nil))
	f.Add(jsonFrame(`{"code":310,"flag":0,"extFields":{"a":"pg","b":"t","c":"TBW102","d":"4","e":"-1","f":"0","g":"1","h":"0","i":"",`+
		`"j":"0","k":"true","m":"false"}}`, nil))
	for _, code := range []int16{SendMessage, SendMessageV2} {
		for _, tt := range extAppenderCases()[:6] {
			c := &Command{Code: code, Language: LangGo, Version: Version, Header: tt.h, SerializeType: SerializeRocketMQ, Body: []byte("b")}
			frame, err := c.Encode()
			if err != nil {
				f.Fatal(err)
			}
			f.Add(frame[4:])
		}
	}
	for _, tt := range extAppenderCases()[6:8] { // pulls
		c := &Command{Code: PullMessage, Language: LangGo, Version: Version, Header: tt.h, SerializeType: SerializeRocketMQ}
		frame, err := c.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(frame[4:])
	}
	f.Add(jsonFrame(officialPullJSON, nil))
	f.Add(jsonFrame(strings.Replace(officialPullJSON, `"sysFlag":"2"`, `"sysFlag":"02"`, 1), nil))
	files, _ := filepath.Glob(filepath.Join(goldenDir, "1*-send-*.bin"))
	for _, p := range append(files, filepath.Join(goldenDir, "320-send-batch-message.bin"), filepath.Join(goldenDir, "11-pull.bin")) {
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkTyped(t, frame)
	})
}
