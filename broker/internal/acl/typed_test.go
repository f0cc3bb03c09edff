package acl

import (
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// recorded returns a request the official client v2.1.2 sent
// (pkg/remoting/protocol's golden frames), decoded.
func recorded(t testing.TB, name string) *protocol.Command {
	t.Helper()
	raw, err := os.ReadFile("../../../pkg/remoting/protocol/testdata/client-v2.1.2/" + name + ".bin")
	if err != nil {
		t.Fatal(err)
	}
	c, err := protocol.DecodeFrame(raw[4:])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reframe encodes c in serialize type st and decodes it again, as the
// broker receives it.
func reframe(t testing.TB, c *protocol.Command, st byte) *protocol.Command {
	t.Helper()
	c.SerializeType = st
	frame, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := protocol.DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestCheckTypedMatchesMap: Check accepts and refuses exactly the same
// requests whether a send or pull header is typed (Request.Header, its
// fields signed from the header) or all fields are in one map (what the
// broker passed before: Command.Fields), for the official client's
// recorded send and pull and pkg/mqclient's binary ones, signed right,
// wrong, tampered with, or not at all.
func TestCheckTypedMatchesMap(t *testing.T) {
	cfg, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	from := netip.MustParseAddr("1.2.3.4")
	bases := []struct {
		name string
		cmd  func() *protocol.Command
	}{
		{"official send", func() *protocol.Command { return recorded(t, "10-send-message") }},
		{"official pull", func() *protocol.Command { return recorded(t, "11-pull") }},
		{"official batch", func() *protocol.Command { return recorded(t, "320-send-batch-message") }},
		{"mqclient send v2", func() *protocol.Command {
			return protocol.NewTypedRequest(protocol.SendMessageV2, (&protocol.SendMessageRequestHeader{ProducerGroup: "pg",
				Topic: "topicD", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: 1796045358404,
				Properties: "UNIQ_KEY\x01ab\x02", MaxReconsumeTimes: -1}).V2(), []byte("hello"))
		}},
		{"mqclient pull", func() *protocol.Command {
			return protocol.NewTypedRequest(protocol.PullMessage, &protocol.PullMessageRequestHeader{ConsumerGroup: "groupB",
				Topic: "topicB", QueueOffset: 7, MaxMsgNums: 32, SysFlag: protocol.PullSuspend, SuspendTimeoutMillis: 20000,
				Subscription: "*", ExpressionType: protocol.ExpressionTypeTag}, nil)
		}},
	}
	// Each change signs (or not) a copy of the base, then edits it.
	changes := []struct {
		name   string
		accept bool
		edit   func(c *protocol.Command)
	}{
		{"signed", true, func(c *protocol.Command) { c.Sign("RocketMQ", "12345678", "") }},
		{"signed, a token the Go client leaves out", true, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.SetExt(FieldSecurityToken, "tok")
		}},
		{"signed with the token (Java)", true, func(c *protocol.Command) { c.Sign("RocketMQ", "12345678", "tok") }},
		{"_UNIQUE_KEY_QUERY added after signing", true, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.SetExt(uniqueKeyQuery, "true")
		}},
		{"wrong secret", false, func(c *protocol.Command) { c.Sign("RocketMQ", "wrong", "") }},
		{"unknown key", false, func(c *protocol.Command) { c.Sign("nobody", "12345678", "") }},
		{"header field changed after signing", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			for _, k := range []string{"topic", "b"} {
				if _, ok := c.ExtFields[k]; ok {
					c.ExtFields[k] += "x"
				}
			}
		}},
		{"queue changed after signing", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			for _, k := range []string{"queueId", "e"} {
				if v, ok := c.ExtFields[k]; ok {
					c.ExtFields[k] = strings.Replace("1"+v, "1-", "-1", 1)
				}
			}
		}},
		{"body changed after signing", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.Body = append(c.Body, '!')
		}},
		{"field added after signing", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.SetExt("zzz", "1")
		}},
		{"signature not base64", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.SetExt(FieldSignature, "!!")
		}},
		{"signature too long", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			c.SetExt(FieldSignature, strings.Repeat("QUFB", 40))
		}},
		{"no signature", false, func(c *protocol.Command) {
			c.Sign("RocketMQ", "12345678", "")
			delete(c.ExtFields, FieldSignature)
		}},
		{"not signed", false, func(*protocol.Command) {}},
	}
	for _, b := range bases {
		for _, ch := range changes {
			for _, st := range []byte{protocol.SerializeJSON, protocol.SerializeRocketMQ} {
				name := b.name + "/" + ch.name
				c := b.cmd()
				c.Flag = 0
				ch.edit(c)
				req := reframe(t, c, st)
				if req.Header == nil {
					t.Fatalf("%s: header not typed", name)
				}
				typed := cfg.Check(Request{Code: req.Code, Ext: req.ExtFields, Header: req.Header, Body: req.Body, Remote: from})
				mapped := cfg.Check(Request{Code: req.Code, Ext: req.Fields(), Body: req.Body, Remote: from})
				if (typed == nil) != (mapped == nil) || typed != nil && typed.Error() != mapped.Error() {
					t.Errorf("%s (type %d): typed %v, map %v", name, st, typed, mapped)
				}
				if (typed == nil) != ch.accept {
					t.Errorf("%s (type %d): %v, want accepted %v", name, st, typed, ch.accept)
				}
			}
		}
	}
}

// BenchmarkCheckSignedSend is the ACL's cost per signed send in the
// broker (checkACL, from the decoded frame): the official client's
// SEND_MESSAGE (1 KiB body) and pkg/mqclient's binary SEND_MESSAGE_V2,
// signed; "fields" passes Command.Fields (the map checkACL built before),
// "typed" the typed header and the other fields as they are.
func BenchmarkCheckSignedSend(b *testing.B) {
	cfg, err := Parse([]byte(sample))
	if err != nil {
		b.Fatal(err)
	}
	official := recorded(b, "10-send-message")
	official.Body = make([]byte, 1024)
	binary := protocol.NewTypedRequest(protocol.SendMessageV2, (&protocol.SendMessageRequestHeader{ProducerGroup: "pg",
		Topic: "topicD", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: 1796045358404,
		Properties: "UNIQ_KEY\x01ab\x02", MaxReconsumeTimes: -1}).V2(), make([]byte, 1024))
	from := netip.MustParseAddr("1.2.3.4")
	for _, in := range []struct {
		name string
		c    *protocol.Command
		st   byte
	}{{"official-json", official, protocol.SerializeJSON}, {"mqclient-binary", binary, protocol.SerializeRocketMQ}} {
		in.c.Sign("RocketMQ", "12345678", "")
		req := reframe(b, in.c, in.st)
		if req.Header == nil {
			b.Fatal("not typed")
		}
		res := []Resource{Topic("topicD", Pub)}
		b.Run(in.name+"/fields", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := cfg.Check(Request{Code: req.Code, Ext: req.Fields(), Body: req.Body, Remote: from, Resources: res}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(in.name+"/typed", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := cfg.Check(Request{Code: req.Code, Ext: req.ExtFields, Header: req.Header, Body: req.Body, Remote: from,
					Resources: res}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
