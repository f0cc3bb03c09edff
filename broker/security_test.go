package broker_test

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver"
	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/remoting/tlstest"
)

// TestTLSMasterSlave: a TLS-only cluster with mutual TLS: NameServer,
// SYNC_MASTER and slave. The slave replicates over the TLS HA port (a
// SYNC_MASTER answers SEND_OK only once the slave has the message) and
// its metadata sync and registrations go over TLS too.
func TestTLSMasterSlave(t *testing.T) {
	t.Parallel()
	certs := tlstest.New(t)
	ns := nameservertest.Start(t, func(o *nameserver.Options) { o.TLSConfig = certs.ServerConfig(true) })
	withTLS := func(o *broker.Options) {
		o.TLSEnable, o.TLSClientAuth = true, true
		o.TLSCertPath, o.TLSKeyPath, o.TLSCAPath = certs.Files.ServerCert, certs.Files.ServerKey, certs.Files.CA
	}
	m := brokertest.Start(t, ns, syncMaster, withTLS)
	s := brokertest.Start(t, ns, slave, withTLS)
	cl := remoting.NewClient(remoting.ClientOptions{TLSConfig: certs.ClientConfig()})
	t.Cleanup(func() { cl.Close() })
	topic := uniq("TLSTopic")
	eventually(t, 30*time.Second, "a send acknowledged by the slave", func() bool {
		resp, err := sendRaw(cl, m.Addr(), topic)
		return err == nil && resp.Code == protocol.Success
	})
	maxOn := func(addr string) int64 {
		h := protocol.QueueRequestHeader{Topic: topic, QueueID: 0}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		resp, err := cl.Invoke(ctx, addr, protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil))
		if err != nil || resp.Code != protocol.Success {
			return -1
		}
		var oh protocol.OffsetResponseHeader
		if oh.Decode(resp.ExtFields) != nil {
			return -1
		}
		return oh.Offset
	}
	// SEND_OK does not wait for the dispatcher: the master's consume
	// queue may show the message a moment later (it failed so once
	// under a loaded full package run).
	var want int64
	eventually(t, 10*time.Second, "the message in the master's consume queue", func() bool {
		want = maxOn(m.Addr())
		return want >= 1
	})
	eventually(t, 30*time.Second, "the slave's copy over TLS", func() bool { return maxOn(s.Addr()) == want })

	// Without a client certificate the master's port refuses.
	bare := remoting.NewClient(remoting.ClientOptions{TLSConfig: certs.ClientConfig()})
	bare.Close()
	nocert := certs.ClientConfig()
	nocert.Certificates = nil
	nc := remoting.NewClient(remoting.ClientOptions{TLSConfig: nocert})
	defer nc.Close()
	if _, err := sendRaw(nc, m.Addr(), topic); err == nil {
		t.Error("send without a client certificate accepted")
	}
}

// TestLimitsWired: the broker.conf limit keys reach the transport:
// an oversized header is answered SYSTEM_ERROR and the connection stays
// usable; connections beyond serverMaxConnections are closed at once;
// a frame not finished within serverFrameReadTimeoutMillis loses its
// connection.
func TestLimitsWired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) {
		o.ServerMaxHeaderSize = 2048
		o.ServerMaxConnections = 3 // the raw client and two more
		o.ServerFrameReadTimeoutMillis = 300
	})
	h := protocol.QueueRequestHeader{Topic: "TBW102", QueueID: 0}
	req := protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil)
	req.SetExt("padding", strings.Repeat("p", 4096))
	if resp := e.invoke(req); resp.Code != protocol.SystemError || !strings.Contains(resp.Remark, "header too large") {
		t.Fatalf("oversized header: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := e.invoke(protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("after an oversized header: code %d %s", resp.Code, resp.Remark)
	}
	slow, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	slow.Write([]byte{0, 0, 1, 0, 0}) // a 256-byte frame, 1 byte of it
	expectEOF := func(nc net.Conn, what string) {
		t.Helper()
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: connection not closed by the broker (%v)", what, err)
		}
	}
	expectEOF(slow, "unfinished frame")
	var extra []net.Conn
	for i := 0; i < 3; i++ {
		nc, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		extra = append(extra, nc)
	}
	expectEOF(extra[2], "connection beyond serverMaxConnections")
	if resp := e.invoke(protocol.NewRequest(protocol.GetMaxOffset, h.Encode(), nil)); resp.Code != protocol.Success {
		t.Fatalf("the established client after refusals: code %d %s", resp.Code, resp.Remark)
	}
}
