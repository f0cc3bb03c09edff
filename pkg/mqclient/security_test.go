package mqclient_test

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
	"github.com/tidemq/tide/pkg/tidetest"
)

const clientACL = `
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: appKey1
    secretKey: appSecret
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
`

// TestCredentials: Tide's client signs requests that a broker with
// aclEnable verifies; wrong or missing credentials are refused with the
// reason.
func TestCredentials(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	if err := os.WriteFile(path, []byte(clientACL), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, func(o *broker.Options) { o.AclEnable = true; o.PlainAclFile = path })
	e := &env{&tidetest.Env{NameServer: ns, Broker: b}}
	adminCreds := mqclient.WithCredentials(mqclient.Credentials{AccessKey: "adminKey", SecretKey: "adminSecret"})
	a, err := mqclient.NewAdmin(e.Options(adminCreds)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	e.Admin = a
	topic := e.Topic(t, 2)

	app := mqclient.WithCredentials(mqclient.Credentials{AccessKey: "appKey1", SecretKey: "appSecret"})
	rec := tidetest.NewRecorder()
	e.Consumer(t, "cg_creds", topic, rec.Handle, app, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	p := e.Producer(t, app)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("signed")}); err != nil {
		t.Fatalf("signed send: %v", err)
	}
	tidetest.WaitFor(t, 20*time.Second, "the signed message consumed", func() bool { return rec.Distinct() == 1 })

	for name, c := range map[string]struct {
		opts []mqclient.Option
		why  string
	}{
		"wrong secret": {[]mqclient.Option{mqclient.WithCredentials(mqclient.Credentials{AccessKey: "appKey1", SecretKey: "nope-nope"})}, "signature"},
		"none":         {nil, "No accessKey"},
	} {
		bad := e.Producer(t, append(c.opts, mqclient.WithRetries(0))...)
		_, err := bad.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("refused")})
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: send err %v, want a refusal mentioning %q", name, err, c.why)
		}
	}
	// A non-admin may not create topics.
	plain, err := mqclient.NewAdmin(e.Options(app)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer plain.Shutdown(context.Background())
	if err := plain.CreateTopic(ctx, "NotAllowed", mqclient.TopicConfig{Queues: 1}); err == nil || !strings.Contains(err.Error(), "admin") {
		t.Errorf("non-admin CreateTopic: %v", err)
	}
}

// TestTLS: NameServer and broker on TLS only; Tide's client with WithTLS
// produces and consumes; the broker registers over TLS too.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSConfig = certs.ServerConfig(false) })
	b := brokertest.Start(t, ns, func(o *broker.Options) {
		o.TLSEnable, o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = true, certs.Files.ServerCert, certs.Files.ServerKey, certs.Files.CA
	})
	e := &env{&tidetest.Env{NameServer: ns, Broker: b}}
	tlsOpt := mqclient.WithTLS(certs.ClientConfig())
	a, err := mqclient.NewAdmin(e.Options(tlsOpt)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	e.Admin = a
	topic := e.Topic(t, 2)
	rec := tidetest.NewRecorder()
	e.Consumer(t, "cg_tls", topic, rec.Handle, tlsOpt, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	p := e.Producer(t, tlsOpt)
	for i := 0; i < 3; i++ {
		if _, err := p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte("over tls")}); err != nil {
			t.Fatalf("send over TLS: %v", err)
		}
	}
	tidetest.WaitFor(t, 20*time.Second, "3 messages consumed over TLS", func() bool { return rec.Distinct() == 3 })

	// A plain client gets nowhere.
	plain, err := mqclient.NewProducer(e.Options(mqclient.WithRetries(0), mqclient.WithRequestTimeout(2*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Start(ctx); err == nil {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = plain.Send(sctx, &mqclient.Message{Topic: topic, Body: []byte("plain")})
		scancel()
		plain.Shutdown(context.Background())
		if err == nil {
			t.Error("plain-TCP send to a TLS cluster succeeded")
		}
	}
}

// TestTLSModePermissiveAndDisabled: a NameServer and a broker with no TLS
// settings run RocketMQ's default tlsMode, permissive: Tide's client with
// WithTLS (trusting the self-signed certificate they make, as RocketMQ
// clients do by default) and a plain client both create topics, produce
// and consume on the same ports. With tlsMode=disabled a TLS client is
// refused and a plain one served. (Before tlsMode, a TLS client could not
// talk to a default broker or NameServer at all; enforcing is TestTLS.)
func TestTLSModePermissiveAndDisabled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode  string
		tlsOK bool
	}{{"", true}, {"permissive", true}, {"disabled", false}} {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSMode = remoting.TLSMode(tc.mode) })
			b := brokertest.Start(t, ns, func(o *broker.Options) { o.TLSMode = tc.mode })
			e := &env{&tidetest.Env{NameServer: ns, Broker: b}}
			e.Admin = tidetest.Admin(t, e.Options()...)
			topic := e.Topic(t, 2)
			for _, cl := range []struct {
				name string
				opts []mqclient.Option
				ok   bool
			}{
				{"plain", nil, true},
				{"TLS", []mqclient.Option{mqclient.WithTLS(&tls.Config{InsecureSkipVerify: true})}, tc.tlsOK},
			} {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				p, err := mqclient.NewProducer(e.Options(append(cl.opts, mqclient.WithRetries(0), mqclient.WithRequestTimeout(2*time.Second))...)...)
				if err != nil {
					t.Fatal(err)
				}
				err = p.Start(ctx)
				if err == nil {
					_, err = p.Send(ctx, &mqclient.Message{Topic: topic, Body: []byte(cl.name)})
				}
				p.Shutdown(context.Background())
				cancel()
				if (err == nil) != cl.ok {
					t.Fatalf("%s producer: err %v, want success %v", cl.name, err, cl.ok)
				}
				if !cl.ok {
					continue
				}
				rec := tidetest.NewRecorder()
				e.Consumer(t, "cg_mode_"+cl.name, topic, rec.Handle, append(cl.opts, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))...)
				tidetest.WaitFor(t, 20*time.Second, cl.name+" consumer got the messages", func() bool { return rec.Distinct() >= 1 })
			}
		})
	}
}
