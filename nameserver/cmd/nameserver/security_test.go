package main

import (
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

func TestSecurityKeys(t *testing.T) {
	certs := tlstest.New(t)
	for _, c := range []struct {
		name string
		cfg  config
		err  string
	}{
		{"defaults", config{}, ""},
		{"limits", config{serverChannelMaxIdleTimeSeconds: "30", serverMaxConnections: "100"}, ""},
		{"tls", config{tlsEnable: "true", tlsCertPath: certs.Files.ServerCert, tlsKeyPath: certs.Files.ServerKey, tlsClientCAPath: certs.Files.CA}, ""},
		{"tls off", config{tlsEnable: "false"}, ""},
		{"tls without cert", config{tlsEnable: "true"}, "tlsCertPath"},
		{"tls bad file", config{tlsEnable: "true", tlsCertPath: "/nonexistent", tlsKeyPath: "/nonexistent"}, "/nonexistent"},
		{"bad bool", config{tlsEnable: "yes please"}, "tlsEnable"},
		{"bad idle", config{serverChannelMaxIdleTimeSeconds: "-1"}, "serverChannelMaxIdleTimeSeconds"},
		{"bad max", config{serverMaxConnections: "many"}, "serverMaxConnections"},
		{"tls mode disabled", config{tlsMode: "disabled"}, ""},
		{"tls mode enforcing", config{tlsMode: "enforcing", tlsCertPath: certs.Files.ServerCert, tlsKeyPath: certs.Files.ServerKey}, ""},
		{"bad tls mode", config{tlsMode: "sometimes"}, "tlsMode"},
	} {
		c.cfg.listenPort, c.cfg.bindAddress = "0", "127.0.0.1"
		c.cfg.scanNotActiveBrokerInterval, c.cfg.brokerChannelExpiredTime = "10000", "120000"
		o, err := c.cfg.options(nil)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: err %v, want one mentioning %q", c.name, err, c.err)
		case c.name == "limits" && (o.IdleTimeout != 30*time.Second || o.MaxConnections != 100):
			t.Errorf("limits not applied: %v %d", o.IdleTimeout, o.MaxConnections)
		case c.name == "tls" && (o.TLSConfig == nil || o.TLSConfig.ClientCAs == nil):
			t.Errorf("tls not applied")
		case c.name == "tls mode disabled" && o.TLSMode != "disabled":
			t.Errorf("tlsMode not applied: %q", o.TLSMode)
		case c.name == "tls mode enforcing" && (o.TLSMode != "enforcing" || o.TLSConfig == nil):
			t.Errorf("tlsMode enforcing not applied: %q", o.TLSMode)
		}
	}
}
