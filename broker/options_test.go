package broker

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemq/tide/broker/internal/store"
)

func TestOptionsApply(t *testing.T) {
	o := DefaultOptions()
	unknown, err := o.Apply(map[string]string{
		"brokerName": "broker-b", "brokerId": "0", "listenPort": "10921", "flushDiskType": "SYNC_FLUSH",
		"autoCreateTopicEnable": "false", "diskMaxUsedSpaceRatio": "80", "fancyNewKey": "1", "namesrvAddr": "127.0.0.1:9876;127.0.0.1:9877",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "fancyNewKey" {
		t.Fatalf("unknown = %v", unknown)
	}
	if o.BrokerName != "broker-b" || o.ListenPort != 10921 || o.Store.FlushDiskType != "SYNC_FLUSH" || o.AutoCreateTopicEnable || o.Store.DiskMaxUsedSpaceRatio != 80 {
		t.Fatalf("not applied: %+v", o)
	}
	if ns := o.NameServers(); len(ns) != 2 || ns[1] != "127.0.0.1:9877" {
		t.Fatalf("name servers %v", ns)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestOptionsApplyBadValue(t *testing.T) {
	for _, kv := range []map[string]string{
		{"listenPort": "abc"}, {"autoCreateTopicEnable": "maybe"}, {"diskMaxUsedSpaceRatio": "x"},
	} {
		o := DefaultOptions()
		if _, err := o.Apply(kv); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Apply(%v) = %v", kv, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"role", func(o *Options) { o.BrokerRole = "BOSS" }, "brokerRole"},
		{"slave id", func(o *Options) { o.BrokerRole = "SLAVE" }, "brokerId > 0"},
		{"master id", func(o *Options) { o.BrokerID = 1 }, "brokerId 0"},
		{"port", func(o *Options) { o.ListenPort = 70000 }, "listenPort"},
		{"ip", func(o *Options) { o.BrokerIP1 = "::1" }, "brokerIP1"},
		{"flush", func(o *Options) { o.Store.FlushDiskType = "SOMETIMES" }, "flushDiskType"},
		{"delay", func(o *Options) { o.Store.MessageDelayLevel = "1s 5x" }, "messageDelayLevel"},
		{"ns", func(o *Options) { o.NamesrvAddr = "nohost" }, "namesrvAddr"},
		{"tls mode", func(o *Options) { o.TLSMode = "Permissive" }, "tlsMode"},
		{"enforcing without certificate", func(o *Options) { o.TLSMode = "enforcing" }, "tlsMode enforcing needs tlsCertPath"},
	}
	for _, c := range cases {
		o := DefaultOptions()
		c.mod(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// TestHAHost: the HA port binds haListenAddr, else listenAddr, else
// brokerIP2, else brokerIP1; never every interface unless asked.
func TestHAHost(t *testing.T) {
	for _, c := range []struct{ ha, listen, ip2, ip1, want string }{
		{"", "", "", "10.0.0.5", "10.0.0.5"},
		{"", "", "10.0.1.5", "10.0.0.5", "10.0.1.5"},
		{"", "127.0.0.1", "10.0.1.5", "10.0.0.5", "127.0.0.1"},
		{"0.0.0.0", "127.0.0.1", "", "10.0.0.5", "0.0.0.0"},
	} {
		o := Options{HAListenAddr: c.ha, ListenAddr: c.listen, BrokerIP2: c.ip2, BrokerIP1: c.ip1}
		if got := o.HAHost(); got != c.want {
			t.Errorf("%+v: HAHost %q, want %q", c, got, c.want)
		}
	}
}

// TestOptionsTLSModeKeys: tlsMode and RocketMQ's tls.server.mode name the
// same option; unset, it is enforcing with tlsEnable, else permissive.
func TestOptionsTLSModeKeys(t *testing.T) {
	for _, key := range []string{"tlsMode", "tls.server.mode"} {
		o := DefaultOptions()
		if _, err := o.Apply(map[string]string{key: "disabled"}); err != nil {
			t.Fatal(err)
		}
		if o.TLSMode != "disabled" || o.tlsMode() != "disabled" {
			t.Errorf("%s=disabled: TLSMode %q, mode %q", key, o.TLSMode, o.tlsMode())
		}
	}
	o := DefaultOptions()
	if o.tlsMode() != "permissive" {
		t.Errorf("default mode %q, want permissive", o.tlsMode())
	}
	o.TLSEnable = true
	if o.tlsMode() != "enforcing" {
		t.Errorf("tlsEnable mode %q, want enforcing", o.tlsMode())
	}
}

// TestOptionsKeysReachTheStore: a broker.conf key the store reads must not
// also be a broker option, or Apply sets the option and the store never sees
// the value (maxTransferCountOnMessageInMemory was caught that way by an
// unused broker field, so every pull stayed at the store's default of 32).
func TestOptionsKeysReachTheStore(t *testing.T) {
	o := DefaultOptions()
	if _, err := o.Apply(map[string]string{
		"maxTransferCountOnMessageInMemory": "256", "maxTransferBytesOnMessageInMemory": "1048576",
	}); err != nil {
		t.Fatal(err)
	}
	if o.Store.MaxTransferCountOnMessageInMemory != 256 || o.Store.MaxTransferBytesOnMessageInMemory != 1<<20 {
		t.Fatalf("store got count %d bytes %d, want 256 and 1 MiB", o.Store.MaxTransferCountOnMessageInMemory, o.Store.MaxTransferBytesOnMessageInMemory)
	}
	v := reflect.TypeOf(Options{})
	for i := 0; i < v.NumField(); i++ {
		for _, key := range strings.Split(v.Field(i).Tag.Get("conf"), ",") {
			if key == "" {
				continue
			}
			st := DefaultOptions().Store
			if err := st.Set(key, "\x00"); !errors.Is(err, store.ErrUnknownKey) {
				t.Errorf("broker option %s (key %q) shadows the store's key of the same name", v.Field(i).Name, key)
			}
		}
	}
}
