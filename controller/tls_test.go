package controller_test

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/controller"
	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/controllerclient"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// TestControllerTLS: the controller port with the broker's TLS modes.
// Enforcing with mutual TLS refuses plain clients and TLS clients without
// a certificate signed by the CA, serves those with one, and a broker in
// controller mode with tlsEnable/tlsClientAuth registers over it and
// becomes master; disabled refuses TLS clients and serves plain ones;
// permissive (the default) serves both.
func TestControllerTLS(t *testing.T) {
	certs := tlstest.New(t)
	metadata := func(addr string, cfg *tls.Config) error {
		rc := remoting.NewClient(remoting.ClientOptions{TLSConfig: cfg, DialTimeout: 2 * time.Second})
		defer rc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := controllerclient.New(rc, []string{addr}).Metadata(ctx, addr)
		return err
	}
	noCert := &tls.Config{RootCAs: certs.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	insecure := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // the permissive self-signed certificate

	enforcing := startController(t, func(o *controller.Options) {
		o.TLSMode, o.TLSConfig, o.ClientTLSConfig = remoting.TLSEnforcing, certs.ServerConfig(true), certs.ClientConfig()
	})
	disabled := startController(t, func(o *controller.Options) { o.TLSMode = remoting.TLSDisabled })
	permissive := startController(t)
	cases := []struct {
		name    string
		addr    string
		cfg     *tls.Config
		serving bool
	}{
		{"enforcing, plain client", enforcing, nil, false},
		{"enforcing, TLS without a client certificate", enforcing, noCert, false},
		{"enforcing, mutual TLS", enforcing, certs.ClientConfig(), true},
		{"disabled, plain client", disabled, nil, true},
		{"disabled, TLS client", disabled, insecure, false},
		{"permissive, plain client", permissive, nil, true},
		{"permissive, TLS client", permissive, insecure, true},
	}
	for _, c := range cases {
		if err := metadata(c.addr, c.cfg); (err == nil) != c.serving {
			t.Errorf("%s: err %v, want served %v", c.name, err, c.serving)
		}
	}

	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSConfig = certs.ServerConfig(true) })
	b := brokertest.Start(t, ns, func(o *broker.Options) {
		o.EnableControllerMode, o.ControllerAddr, o.BrokerName = true, enforcing, "tls"
		o.ControllerHeartBeatTimeoutMills, o.BrokerHeartbeatInterval = 2500, 200
		o.TLSEnable, o.TLSClientAuth = true, true
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = certs.Files.ServerCert, certs.Files.ServerKey, certs.Files.CA
	})
	if running, id, master, ok := b.ControllerRole(); !ok || running != "master" || id != 1 || master.MasterEpoch != 1 {
		t.Fatalf("broker over TLS: %s id %d master %+v", running, id, master)
	}
}
