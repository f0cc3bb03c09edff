package nameserver_test

import (
	"context"
	"encoding/hex"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/tidemq/tide/nameserver/nameservertest"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// fakeBroker is just enough of a broker for the official client: it
// answers HEART_BEAT, SEND_MESSAGE (with a well-formed offset message id)
// and DELETE_TOPIC_IN_BROKER, and counts what it received.
type fakeBroker struct {
	addr    string
	sends   atomic.Int32
	deletes atomic.Int32
	lastTo  atomic.Value // topic of the last send
}

func startFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	fb := &fakeBroker{}
	srv := remoting.NewServer(remoting.ServerOptions{Logger: quietLogger()})
	srv.HandleFunc(protocol.HeartBeat, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		return protocol.NewResponse(req, protocol.Success, "")
	})
	srv.HandleFunc(protocol.DeleteTopicInBroker, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		fb.deletes.Add(1)
		return protocol.NewResponse(req, protocol.Success, "")
	})
	srv.HandleFunc(protocol.SendMessage, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) *protocol.Command {
		n := fb.sends.Add(1)
		fb.lastTo.Store(req.Ext("topic"))
		resp := protocol.NewResponse(req, protocol.Success, "")
		// Offset message id: 4-byte IPv4, 4-byte port, 8-byte commit
		// log offset, as 32 upper-case hex digits.
		id := []byte{127, 0, 0, 1, 0, 0, 0x2A, 0x9F, 0, 0, 0, 0, 0, 0, 0, byte(n)}
		resp.SetExt("msgId", strings.ToUpper(hex.EncodeToString(id)))
		resp.SetExt("queueId", req.Ext("queueId"))
		resp.SetExtInt("queueOffset", int64(n-1))
		return resp
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fb.addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return fb
}

func TestInteropOfficialClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the official client")
	}
	rlog.SetLogLevel("error")
	ns := nameservertest.Start(t)
	fb := startFakeBroker(t)

	// The fake broker registers with our remoting client; the connection
	// stays open for the whole test (closing it would drop the broker).
	cl := newClient(t)
	const topic = "interop-topic"
	register(t, cl, ns, broker{"DefaultCluster", "broker-a", fb.addr, 0}, false, topicConf(topic, 4), topicConf("other-topic", 2))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resolver := primitive.NewPassthroughResolver([]string{ns})

	adm, err := admin.NewAdmin(admin.WithResolver(resolver))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatalf("FetchAllTopicList: %v", err)
	}
	if !slices.Contains(list.TopicList, topic) || !slices.Contains(list.TopicList, "other-topic") {
		t.Fatalf("topic list %v", list.TopicList)
	}

	// Route parsing by the official client: publish queues come from the
	// writable queue data of brokers that have a master address.
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil {
		t.Fatalf("FetchPublishMessageQueues: %v", err)
	}
	if len(mqs) != 4 || mqs[0].BrokerName != "broker-a" {
		t.Fatalf("publish queues %v", mqs)
	}

	// A producer resolves the route and sends to the address in it.
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(resolver),
		producer.WithGroupName("interop-producer"),
		producer.WithRetry(1),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("hello")))
	if err != nil {
		t.Fatalf("SendSync: %v", err)
	}
	if res.Status != primitive.SendOK || res.MessageQueue.BrokerName != "broker-a" || len(res.OffsetMsgID) != 32 {
		t.Fatalf("send result %+v", res)
	}
	if fb.sends.Load() != 1 || fb.lastTo.Load() != topic {
		t.Fatalf("fake broker saw %d sends to %v", fb.sends.Load(), fb.lastTo.Load())
	}

	// DeleteTopic asks the broker found in the route, then every
	// NameServer.
	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic)); err != nil {
		t.Fatalf("DeleteTopic: %v", err)
	}
	if fb.deletes.Load() != 1 {
		t.Fatalf("broker got %d deletes", fb.deletes.Load())
	}
	list, err = adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(list.TopicList, topic) || !slices.Contains(list.TopicList, "other-topic") {
		t.Fatalf("topic list after delete %v", list.TopicList)
	}
	if _, resp := route(t, cl, ns, topic); resp.Code != protocol.TopicNotExist {
		t.Fatalf("route after delete: code %d", resp.Code)
	}
}
