package acl

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const sample = `
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.{5,6}
accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
      - topicD=PUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
`

func TestParsePerm(t *testing.T) {
	for in, want := range map[string]Perm{"PUB": Pub, "SUB": Sub, "PUB|SUB": Pub | Sub, "SUB|PUB": Pub | Sub,
		" PUB | SUB ": Pub | Sub, "DENY": Deny, "": Deny, "pub": Deny, "ALL": Deny} {
		if got := ParsePerm(in); got != want {
			t.Errorf("ParsePerm(%q) = %v, want %v", in, got, want)
		}
	}
	for _, c := range []struct {
		owned, needed Perm
		ok            bool
	}{{Pub, Pub, true}, {Pub, Sub, false}, {Pub | Sub, Sub, true}, {Deny | Pub, Pub, false}, {Sub, Any, true}, {Deny, Any, false}} {
		if got := c.owned.Allows(c.needed); got != c.ok {
			t.Errorf("%v.Allows(%v) = %v", c.owned, c.needed, got)
		}
	}
}

func TestAddrPattern(t *testing.T) {
	cases := []struct {
		pat  string
		yes  []string
		no   []string
		fail bool
	}{
		{pat: "*", yes: []string{"1.2.3.4", "::1"}},
		{pat: "*.*.*.*", yes: []string{"1.2.3.4"}},
		{pat: "192.168.0.1", yes: []string{"192.168.0.1", "::ffff:192.168.0.1"}, no: []string{"192.168.0.2"}},
		{pat: "192.168.0.{1,2}", yes: []string{"192.168.0.2"}, no: []string{"192.168.0.3"}},
		{pat: "192.168.*", yes: []string{"192.168.200.3"}, no: []string{"192.169.0.1", "::1"}},
		{pat: "192.168.1.10-20", yes: []string{"192.168.1.10", "192.168.1.20"}, no: []string{"192.168.1.21"}},
		{pat: "10.1-2.*.*", yes: []string{"10.2.9.9"}, no: []string{"10.3.0.0"}},
		{pat: "10.0.0.0/8", yes: []string{"10.9.9.9"}, no: []string{"11.0.0.1"}},
		{pat: "::1", yes: []string{"::1"}, no: []string{"127.0.0.1"}},
		{pat: "192.168", fail: true},
		{pat: "192.168.*.1", fail: true},
		{pat: "192.{1,2}.0.0", fail: true},
		{pat: "1.2.3.256", fail: true},
		{pat: "1.2.3.9-1", fail: true},
		{pat: "1.2.3.4.5", fail: true},
		{pat: "10.0.0.0/99", fail: true},
	}
	for _, c := range cases {
		p, err := parseAddrPattern(c.pat)
		if c.fail {
			if err == nil {
				t.Errorf("%q: parsed, want error", c.pat)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.pat, err)
			continue
		}
		for _, a := range c.yes {
			if !p.match(netip.MustParseAddr(a)) {
				t.Errorf("%q should match %s", c.pat, a)
			}
		}
		for _, a := range c.no {
			if p.match(netip.MustParseAddr(a)) {
				t.Errorf("%q should not match %s", c.pat, a)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	for name, text := range map[string]string{
		"yaml":         "accounts: [",
		"short key":    "accounts:\n  - accessKey: abc\n    secretKey: 12345678\n",
		"short secret": "accounts:\n  - accessKey: abcdefg\n    secretKey: 123\n",
		"dup":          "accounts:\n  - {accessKey: abcdefg, secretKey: 12345678}\n  - {accessKey: abcdefg, secretKey: 12345678}\n",
		"bad perm":     "accounts:\n  - accessKey: abcdefg\n    secretKey: 12345678\n    topicPerms: [topicA]\n",
		"bad white":    "accounts:\n  - accessKey: abcdefg\n    secretKey: 12345678\n    whiteRemoteAddress: 1.2.3\n",
		"bad global":   "globalWhiteRemoteAddresses: [300.1.1.1]\n",
	} {
		if _, err := Parse([]byte(text)); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
	c, err := Parse([]byte(sample))
	if err != nil || c.Accounts() != 2 {
		t.Fatalf("sample: %v", err)
	}
	if _, err := Parse(nil); err != nil {
		t.Errorf("empty file: %v", err)
	}
}

// signed builds a request signed by ak/sk as the official client does.
func signed(code int16, ext map[string]string, body []byte, ak, sk, from string) Request {
	e := map[string]string{}
	for k, v := range ext {
		e[k] = v
	}
	e[FieldAccessKey] = ak
	e[FieldSignature] = Sign(e, body, sk)
	return Request{Code: code, Ext: e, Body: body, Remote: netip.MustParseAddr(from)}
}

func TestCheck(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	send := func(topic string) map[string]string { return map[string]string{"a": "pg", "b": topic, "c": "TBW102"} }
	pull := func(topic, group string) map[string]string {
		return map[string]string{"topic": topic, "consumerGroup": group, "queueId": "0"}
	}
	// with sets what the broker derives from the request's typed header.
	with := func(r Request, admin bool, res ...Resource) Request {
		r.Admin, r.Resources = admin, res
		return r
	}
	pub := func(topic string) []Resource { return []Resource{Topic(topic, Pub)} }
	sub := func(topic, group string) []Resource { return []Resource{Topic(topic, Sub), Group(group, Sub)} }
	cases := []struct {
		name string
		req  Request
		deny string // "" = allowed
	}{
		{"pub allowed", with(signed(protocol.SendMessageV2, send("topicB"), []byte("x"), "RocketMQ", "12345678", "1.1.1.1"), false, pub("topicB")...), ""},
		{"pub only topic", with(signed(protocol.SendMessageV2, send("topicD"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, pub("topicD")...), ""},
		{"pub denied", with(signed(protocol.SendMessageV2, send("topicA"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, pub("topicA")...), "topic=topicA"},
		{"pub on sub-only", with(signed(protocol.SendMessageV2, send("topicC"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, pub("topicC")...), "topic=topicC"},
		{"default topic deny", with(signed(protocol.SendMessageV2, send("other"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, pub("other")...), "topic=other"},
		{"wrong secret", with(signed(protocol.SendMessageV2, send("topicB"), nil, "RocketMQ", "wrongwrong", "1.1.1.1"), false, pub("topicB")...), "signature"},
		{"unknown key", signed(protocol.SendMessageV2, send("topicB"), nil, "nobody1", "12345678", "1.1.1.1"), "No acl config for nobody1"},
		{"no key", Request{Code: protocol.SendMessageV2, Ext: send("topicB"), Remote: netip.MustParseAddr("1.1.1.1")}, "No accessKey"},
		{"global white", with(Request{Code: protocol.SendMessageV2, Ext: send("topicA"), Remote: netip.MustParseAddr("10.10.103.7")}, false, pub("topicA")...), ""},
		{"global white list", with(Request{Code: protocol.UpdateAndCreateTopic, Ext: nil, Remote: netip.MustParseAddr("192.168.0.6")}, true), ""},
		{"account white skips signature", with(signed(protocol.SendMessageV2, send("topicA"), nil, "rocketmq2", "bad-secret", "192.168.1.9"), false, pub("topicA")...), ""},
		{"pull sub + default group", with(signed(protocol.PullMessage, pull("topicC", "anyGroup"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, sub("topicC", "anyGroup")...), ""},
		{"pull denied group", with(signed(protocol.PullMessage, pull("topicC", "groupA"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, sub("topicC", "groupA")...), "group=groupA"},
		{"retry send is group access", with(signed(protocol.SendMessageV2, send("%RETRY%groupA"), nil, "RocketMQ", "12345678", "1.1.1.1"), false, pub("%RETRY%groupA")...), "group=groupA"},
		{"admin code refused", with(signed(protocol.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "RocketMQ", "12345678", "1.1.1.1"), true), "admin"},
		{"admin code allowed", with(signed(protocol.UpdateAndCreateTopic, map[string]string{"topic": "x"}, nil, "rocketmq2", "12345678", "8.8.8.8"), true), ""},
		{"admin no lists = all", with(signed(protocol.PullMessage, pull("zzz", "yyy"), nil, "rocketmq2", "12345678", "8.8.8.8"), false, sub("zzz", "yyy")...), ""},
		{"no resources", signed(protocol.GetMaxOffset, map[string]string{"topic": "topicA", "queueId": "0"}, nil, "RocketMQ", "12345678", "1.1.1.1"), ""},
	}
	for _, tc := range cases {
		err := c.Check(tc.req)
		switch {
		case tc.deny == "" && err != nil:
			t.Errorf("%s: denied: %v", tc.name, err)
		case tc.deny != "" && (err == nil || !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.deny)):
			t.Errorf("%s: err %v, want denial mentioning %q", tc.name, err, tc.deny)
		}
	}

	// Tampering with a signed field or the body breaks the signature.
	r := signed(protocol.SendMessageV2, send("topicB"), []byte("body"), "RocketMQ", "12345678", "1.1.1.1")
	r.Body = []byte("BODY")
	if err := c.Check(r); err == nil {
		t.Error("tampered body accepted")
	}
	// SecurityToken: Java signs it, rocketmq-client-go does not; both verify.
	e := map[string]string{"b": "topicB", FieldAccessKey: "RocketMQ"}
	e[FieldSignature] = Sign(e, nil, "12345678")
	e[FieldSecurityToken] = "tok"
	if err := c.Check(Request{Code: protocol.SendMessageV2, Ext: e, Remote: netip.MustParseAddr("1.1.1.1")}); err != nil {
		t.Errorf("Go-style SecurityToken signature: %v", err)
	}

	// Authorize: resources decided after a lookup, for a verified sender.
	auth := []struct {
		name string
		id   Identity
		res  []Resource
		deny string
	}{
		{"own topic", Identity{"RocketMQ", netip.MustParseAddr("1.1.1.1")}, pub("topicB"), ""},
		{"other topic", Identity{"RocketMQ", netip.MustParseAddr("1.1.1.1")}, pub("topicA"), "topic=topicA"},
		{"unknown key", Identity{"nobody1", netip.MustParseAddr("1.1.1.1")}, pub("topicB"), "No acl config"},
		{"global white", Identity{"", netip.MustParseAddr("10.10.103.7")}, pub("topicA"), ""},
		{"admin lists nothing", Identity{"rocketmq2", netip.MustParseAddr("8.8.8.8")}, pub("anything"), ""},
	}
	for _, tc := range auth {
		err := c.Authorize(tc.id, false, tc.res...)
		switch {
		case tc.deny == "" && err != nil:
			t.Errorf("Authorize %s: denied: %v", tc.name, err)
		case tc.deny != "" && (err == nil || !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.deny)):
			t.Errorf("Authorize %s: err %v, want denial mentioning %q", tc.name, err, tc.deny)
		}
	}
	if err := c.Authorize(Identity{"RocketMQ", netip.MustParseAddr("1.1.1.1")}, true); err == nil {
		t.Error("Authorize admin for a non-admin account: allowed")
	}
}

func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	write := func(s string) {
		// Write beside and rename: what editors and config managers do.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write(sample)
	v, err := Open(path, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	req := signed(protocol.SendMessageV2, map[string]string{"b": "topicA"}, nil, "RocketMQ", "12345678", "1.1.1.1")
	req.Resources = []Resource{Topic("topicA", Pub)}
	if v.Check(req) == nil {
		t.Fatal("topicA allowed before the change")
	}
	write(strings.Replace(sample, "topicA=DENY", "topicA=PUB", 1))
	deadline := time.Now().Add(5 * time.Second)
	for v.Check(req) != nil {
		if time.Now().After(deadline) {
			t.Fatal("change not picked up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A broken edit keeps the configuration in force.
	write("accounts: [")
	if _, err := v.Reload(); err == nil {
		t.Error("broken file reloaded")
	}
	if err := v.Check(req); err != nil {
		t.Errorf("broken edit changed the decision: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.yml"), 0, nil); err == nil {
		t.Error("missing file opened")
	}
	// The version counts the loaded changes: the first load and the one
	// edit; the broken edit and a rewrite of the same content count nothing.
	write(strings.Replace(sample, "topicA=DENY", "topicA=PUB", 1))
	if _, err := v.Reload(); err != nil {
		t.Fatal(err)
	}
	if ver := v.Version(); ver.Counter != 2 || ver.Timestamp == 0 {
		t.Errorf("version %+v, want counter 2", ver)
	}
}
