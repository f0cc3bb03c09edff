package mqclient

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// fakeBroker is a remoting server that answers sends with a configurable
// code and counts them; it stands in for a broker in unit tests.
type fakeBroker struct {
	srv  *remoting.Server
	addr string
	name string
	fail atomic.Int32 // response code for sends (0 = success)
	// failBatch, if set, is the response code for batch sends only
	failBatch atomic.Int32
	sends     atomic.Int32
	// hang, once set, makes every send and heartbeat get no answer (a
	// vanished host); hung counts them
	hang    atomic.Bool
	hung    atomic.Int32
	release chan struct{}
	mu      sync.Mutex
	log     []*protocol.Command
}

func startServer(t *testing.T, s *remoting.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return ln.Addr().String()
}

func newFakeBroker(t *testing.T, name string) *fakeBroker {
	f := &fakeBroker{name: name, srv: remoting.NewServer(remoting.ServerOptions{}), release: make(chan struct{})}
	send := func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		if f.hung0(ctx) {
			return nil
		}
		f.sends.Add(1)
		f.mu.Lock()
		f.log = append(f.log, req)
		f.mu.Unlock()
		if code := int16(f.failBatch.Load()); code != 0 && req.Code == protocol.SendBatchMessage {
			return protocol.NewResponse(req, code, "injected batch failure")
		}
		if code := int16(f.fail.Load()); code != 0 {
			return protocol.NewResponse(req, code, "injected failure")
		}
		h, err := protocol.DecodeSendRequest(req)
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		resp := protocol.NewResponse(req, protocol.Success, "")
		rh := protocol.SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000000", QueueID: h.QueueID, QueueOffset: int64(f.sends.Load())}
		resp.ExtFields = rh.Encode()
		return resp
	}
	f.srv.HandleFunc(protocol.SendMessage, send)
	f.srv.HandleFunc(protocol.SendMessageV2, send)
	f.srv.HandleFunc(protocol.SendBatchMessage, send)
	f.srv.HandleFunc(protocol.HeartBeat, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		if f.hung0(ctx) {
			return nil
		}
		return protocol.NewResponse(req, protocol.Success, "")
	})
	f.srv.HandleFunc(protocol.UnregisterClient, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		return protocol.NewResponse(req, protocol.Success, "")
	})
	f.addr = startServer(t, f.srv)
	t.Cleanup(func() { close(f.release) }) // before the server's shutdown
	return f
}

// hung0 blocks a request while hang is set (until the test ends) and
// reports whether it did.
func (f *fakeBroker) hung0(ctx context.Context) bool {
	if !f.hang.Load() {
		return false
	}
	f.hung.Add(1)
	select {
	case <-f.release:
	case <-ctx.Done():
	}
	return true
}

// startFakeNameServer serves a route for topic over the given brokers
// with queues queues each; other topics are unknown.
func startFakeNameServer(t *testing.T, topic string, queues int32, brokers ...*fakeBroker) string {
	s := remoting.NewServer(remoting.ServerOptions{})
	s.HandleFunc(protocol.GetRouteInfoByTopic, func(ctx context.Context, c *remoting.Conn, req *protocol.Command) *protocol.Command {
		if req.Ext("topic") != topic {
			return protocol.NewResponse(req, protocol.TopicNotExist, "No topic route info in name server for the topic: "+req.Ext("topic"))
		}
		r := protocol.TopicRouteData{}
		for _, b := range brokers {
			r.BrokerDatas = append(r.BrokerDatas, protocol.BrokerData{Cluster: "c", BrokerName: b.name, BrokerAddrs: map[int64]string{0: b.addr}})
			r.QueueDatas = append(r.QueueDatas, protocol.QueueData{BrokerName: b.name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6})
		}
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = r.Encode()
		return resp
	})
	return startServer(t, s)
}
