package acl

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// FuzzParse: any plain_acl.yml text parses or fails with ErrConfig; a
// configuration that parses decides any request without panicking, and a
// request signed with a known account's secret is never refused for its
// signature.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample), "RocketMQ", "topicB", []byte("body"), "1.2.3.4")
	f.Add([]byte("globalWhiteRemoteAddresses: ['*']\n"), "", "", []byte(nil), "::1")
	f.Add([]byte("accounts:\n  - {accessKey: abcdefg, secretKey: 1234567, topicPerms: ['a=PUB', 'b=SUB|PUB'], groupPerms: ['g=DENY']}\n"), "abcdefg", "a", []byte{0}, "10.0.0.1")
	f.Add([]byte("accounts: {}\n"), "x", "y", []byte{}, "")
	f.Fuzz(func(t *testing.T, data []byte, ak, topic string, body []byte, remote string) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error %v does not wrap ErrConfig", err)
			}
			return
		}
		ip, _ := netip.ParseAddr(remote)
		ext := map[string]string{"b": topic, FieldAccessKey: ak}
		a := c.accounts[ak]
		secret := "not-the-secret"
		if a != nil {
			secret = string(a.secretKey)
		}
		ext[FieldSignature] = Sign(ext, body, secret)
		for _, code := range []int16{protocol.SendMessageV2, protocol.PullMessage, protocol.HeartBeat, protocol.UpdateAndCreateTopic} {
			err := c.Check(Request{Code: code, Ext: ext, Body: body, Remote: ip, Admin: code == protocol.UpdateAndCreateTopic,
				Resources: []Resource{Topic(topic, Pub), Group(topic, Sub)}})
			if a != nil && err != nil && errors.Is(err, ErrDenied) && strings.Contains(err.Error(), "Check signature failed") {
				t.Fatalf("correctly signed request refused for its signature: %v", err)
			}
		}
	})
}

// FuzzAddrPattern: whitelist patterns parse or fail; a parsed one matches
// any address without panicking, and "*" forms match everything.
func FuzzAddrPattern(f *testing.F) {
	for _, s := range []string{"*", "192.168.0.{1,2}", "10.1-2.*", "10.0.0.0/8", "::1", "1.2.3.4", "1.2.*.4", "{}", "1.2.3.-", "1.2.3.4-"} {
		f.Add(s, "192.168.0.1")
	}
	f.Fuzz(func(t *testing.T, pat, addr string) {
		p, err := parseAddrPattern(pat)
		if err != nil {
			return
		}
		ip, _ := netip.ParseAddr(addr)
		if p.all && !p.match(ip) {
			t.Fatalf("%q does not match %q", pat, addr)
		}
		_ = p.match(ip)
	})
}
