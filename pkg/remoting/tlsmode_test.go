package remoting

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// TestTLSModes: one port per mode, a plain and a TLS client each; the
// mode decides who is served (RocketMQ's tls.server.mode), on the
// remoting Server.
func TestTLSModes(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	selfSigned, err := SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		mode           TLSMode
		cfg            *tls.Config
		clientCfg      *tls.Config
		plainOK, tlsOK bool
	}{
		{"disabled", TLSDisabled, nil, certs.ClientConfig(), true, false},
		{"zero mode, no TLS config", "", nil, certs.ClientConfig(), true, false},
		{"permissive", TLSPermissive, certs.ServerConfig(false), certs.ClientConfig(), true, true},
		{"permissive, self-signed", TLSPermissive, selfSigned, &tls.Config{InsecureSkipVerify: true}, true, true},
		{"enforcing", TLSEnforcing, certs.ServerConfig(false), certs.ClientConfig(), false, true},
		{"zero mode with a TLS config (tlsEnable)", "", certs.ServerConfig(false), certs.ClientConfig(), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := newTestServer(t, ServerOptions{TLSMode: tc.mode, TLSConfig: tc.cfg})
			for _, cl := range []struct {
				name string
				cfg  *tls.Config
				ok   bool
			}{{"plain", nil, tc.plainOK}, {"TLS", tc.clientCfg, tc.tlsOK}} {
				c := NewClient(ClientOptions{Logger: testLogger(), TLSConfig: cl.cfg})
				for i := range 2 { // twice: the connection keeps working after its first frame
					resp, err := c.Invoke(ctxTimeout(t, 3*time.Second), addr, request(i))
					served := err == nil && resp.Code == protocol.Success && string(resp.Body) == "body-"+string(rune('0'+i))
					if served != cl.ok {
						t.Errorf("%s client, request %d: served %v, want %v (err %v)", cl.name, i, served, cl.ok, err)
					}
					if !cl.ok {
						break
					}
				}
				c.Close()
			}
		})
	}
	if err := NewServer(ServerOptions{TLSMode: TLSPermissive}).ListenAndServe("127.0.0.1:0"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("permissive without a TLS config: %v", err)
	}
	if _, err := ParseTLSMode("Permissive"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseTLSMode(Permissive): %v", err)
	}
}
