// Command framerecord records the raw remoting frames the official Go client
// github.com/apache/rocketmq-client-go/v2 v2.1.2 sends, as golden files for
// pkg/remoting/protocol (golden_test.go there decodes every one of them).
//
// It listens on 127.0.0.1:0 and plays NameServer and broker at once,
// answering each request minimally with our codec (a route that points back
// at itself, heartbeat OK, send OK with a 32-hex offset msgId, one message on
// the first pull, ...) so the client goes on to its next request. It drives a
// producer, a transaction producer, three push consumers (concurrent,
// orderly, from-timestamp) and the admin API, pushes CHECK_TRANSACTION_STATE
// and GET_CONSUMER_RUNNING_INFO to the client, and writes the first frame of
// every kind as <code>-<name>.bin (the client's replies to pushed requests as
// <code>-reply-<name>.bin): the 4-byte length prefix followed by the frame,
// exactly as read from the socket.
//
// Re-run (about 30 s), from the repository root:
//
//	cd tools/framerecord && go run . -out ../../pkg/remoting/protocol/testdata/client-v2.1.2
//
// then run go test ./pkg/remoting/protocol/ -run Golden and commit the files.
// The frames carry timestamps, ids and Go map order, so every run gives
// different bytes with the same meaning.
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

const (
	brokerName  = "broker-a"
	clusterName = "DefaultCluster"
	topic       = "TopicTest"
	producerGrp = "pg"
	txGroup     = "txg"
	consumerGrp = "cg"
	orderlyGrp  = "og"
	tsGroup     = "tg"
)

func main() {
	out := flag.String("out", "../../pkg/remoting/protocol/testdata/client-v2.1.2", "directory for the .bin files")
	timeout := flag.Duration("timeout", 90*time.Second, "give up after this long")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*out, *timeout, log); err != nil {
		log.Error("framerecord failed", "err", err)
		os.Exit(1)
	}
}

// recorder is the fake NameServer+broker. All fields behind mu.
type recorder struct {
	log    *slog.Logger
	ln     net.Listener
	addr   netip.AddrPort
	mu     sync.Mutex
	frames map[string][]byte // file name -> raw frame
	// pushed maps the opaque of a request we pushed to the client to the
	// file name of its reply.
	pushed   map[int32]string
	pulled   map[string]bool // topic@queue that already got its one message
	clientID string
	nextOff  int64
	opaque   int32
	pushedTx bool
	pushedRI bool
}

func run(out string, timeout time.Duration, log *slog.Logger) error {
	rlog.SetLogLevel("error")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	r := &recorder{
		log: log, ln: ln, addr: netip.MustParseAddrPort(ln.Addr().String()),
		frames: map[string][]byte{}, pushed: map[int32]string{}, pulled: map[string]bool{},
		nextOff: 1000, opaque: 1 << 20,
	}
	go r.serve()
	addr := ln.Addr().String()
	ns := primitive.NamesrvAddr{addr}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	// Consumers first, so the heartbeat carries every group.
	var consumers []rocketmq.PushConsumer
	newConsumer := func(group string, orderly bool, where consumer.ConsumeFromWhere, expr string, res consumer.ConsumeResult) error {
		c, err := rocketmq.NewPushConsumer(
			consumer.WithNameServer(ns), consumer.WithGroupName(group), consumer.WithConsumerOrder(orderly),
			consumer.WithConsumeFromWhere(where), consumer.WithConsumeTimestamp("20230101000000"),
		)
		if err != nil {
			return err
		}
		err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr},
			func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) { return res, nil })
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return err
		}
		consumers = append(consumers, c)
		return nil
	}
	if err := newConsumer(consumerGrp, false, consumer.ConsumeFromLastOffset, "TagA || TagB", consumer.ConsumeRetryLater); err != nil {
		return fmt.Errorf("push consumer: %w", err)
	}
	if err := newConsumer(orderlyGrp, true, consumer.ConsumeFromFirstOffset, "*", consumer.ConsumeSuccess); err != nil {
		return fmt.Errorf("orderly consumer: %w", err)
	}
	if err := newConsumer(tsGroup, false, consumer.ConsumeFromTimestamp, "TagC", consumer.ConsumeSuccess); err != nil {
		return fmt.Errorf("timestamp consumer: %w", err)
	}

	p, err := rocketmq.NewProducer(producer.WithNameServer(ns), producer.WithGroupName(producerGrp), producer.WithRetry(1))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	msg := primitive.NewMessage(topic, []byte("hello"))
	msg.WithTag("TagA")
	msg.WithKeys([]string{"k1", "k2"})
	msg.WithProperty("color", "blue")
	if _, err := p.SendSync(ctx, msg); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	b1 := primitive.NewMessage(topic, []byte("hi"))
	b1.WithTag("TagA")
	b1.WithKeys([]string{"k1", "k2"})
	b2 := primitive.NewMessage(topic, []byte("there"))
	b2.WithTag("TagB")
	if _, err := p.SendSync(ctx, b1, b2); err != nil {
		return fmt.Errorf("batch send: %w", err)
	}
	reply := primitive.NewMessage(clusterName+"_REPLY_TOPIC", []byte("reply"))
	reply.WithProperty(primitive.PropertyMsgType, "reply")
	reply.WithProperty(primitive.PropertyCorrelationID, "corr-1")
	reply.WithProperty(primitive.PropertyMessageReplyToClient, "127.0.0.1@1")
	reply.WithProperty(primitive.PropertyMessageTTL, "5000")
	if _, err := p.SendSync(ctx, reply); err != nil {
		return fmt.Errorf("reply send: %w", err)
	}

	// A separate instance name gives the transaction producer its own client
	// instance: v2.1.2 drops check-backs whose PGROUP differs from the group
	// of the (shared) instance's first user.
	tp, err := rocketmq.NewTransactionProducer(txListener{}, producer.WithNameServer(ns), producer.WithGroupName(txGroup),
		producer.WithInstanceName("tx"))
	if err != nil {
		return err
	}
	if err := tp.Start(); err != nil {
		return err
	}
	txMsg := primitive.NewMessage(topic, []byte("tx"))
	txMsg.WithTag("TagA")
	if _, err := tp.SendMessageInTransaction(ctx, txMsg); err != nil {
		return fmt.Errorf("transaction send: %w", err)
	}

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{addr})))
	if err != nil {
		return err
	}
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate("newOne"), admin.WithBrokerAddrCreate(addr)); err != nil {
		return fmt.Errorf("create topic: %w", err)
	}
	if _, err := adm.FetchAllTopicList(ctx); err != nil {
		return fmt.Errorf("topic list: %w", err)
	}
	if _, err := adm.GetAllSubscriptionGroup(ctx, addr, 3*time.Second); err != nil {
		return fmt.Errorf("subscription groups: %w", err)
	}
	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete("newOne"), admin.WithBrokerAddrDelete(addr),
		admin.WithNameSrvAddr([]string{addr})); err != nil {
		return fmt.Errorf("delete topic: %w", err)
	}

	// Wait for the consumer-side requests, then shut down, which persists
	// offsets (15) and unlocks orderly queues (42).
	want := []string{"11-pull", "14-query-consumer-offset", "29-search-offset-by-timestamp", "30-get-max-offset",
		"36-consumer-send-msg-back", "37-end-transaction", "37-end-transaction-check", "38-get-consumer-list-by-group",
		"41-lock-batch-mq", "307-reply-consumer-running-info", "15-update-consumer-offset"}
	if err := r.waitFor(ctx, want...); err != nil {
		r.log.Warn("not everything recorded", "err", err)
	}
	for _, c := range consumers {
		_ = c.Shutdown()
	}
	_ = tp.Shutdown()
	_ = p.Shutdown()
	_ = adm.Close()
	if err := r.waitFor(ctx, "42-unlock-batch-mq"); err != nil {
		r.log.Warn("no unlock recorded", "err", err)
	}
	return r.write(out)
}

type txListener struct{}

func (txListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.CommitMessageState
}

func (txListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.RollbackMessageState
}

// waitFor polls until every named frame is recorded or ctx ends.
func (r *recorder) waitFor(ctx context.Context, names ...string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		r.mu.Lock()
		var missing []string
		for _, n := range names {
			if r.frames[n] == nil {
				missing = append(missing, n)
			}
		}
		r.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("missing %s: %w", strings.Join(missing, ", "), ctx.Err())
		case <-tick.C:
		}
	}
}

func (r *recorder) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.frames))
	for n := range r.frames {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n+".bin"), r.frames[n], 0o644); err != nil {
			return err
		}
	}
	r.log.Info("recorded frames", "dir", dir, "files", strings.Join(names, " "))
	return nil
}

func (r *recorder) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.conn(c)
	}
}

// conn reads frames from one client connection. Replies go out under wmu
// since handlers may answer from other goroutines (held pulls).
func (r *recorder) conn(c net.Conn) {
	defer c.Close()
	var wmu sync.Mutex
	send := func(cmd *protocol.Command) {
		b, err := cmd.Encode()
		if err != nil {
			r.log.Error("encode", "err", err)
			return
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, _ = c.Write(b)
	}
	for {
		var lenBuf [4]byte
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(lenBuf[:])
		if n > protocol.DefaultMaxFrameSize {
			r.log.Error("frame too large", "len", n)
			return
		}
		raw := make([]byte, 4+n)
		copy(raw, lenBuf[:])
		if _, err := io.ReadFull(c, raw[4:]); err != nil {
			return
		}
		cmd, err := protocol.DecodeFrame(raw[4:])
		if err != nil {
			r.log.Error("decode", "err", err)
			return
		}
		if cmd.IsResponse() {
			r.mu.Lock()
			if name, ok := r.pushed[cmd.Opaque]; ok {
				r.keep(name, raw, false)
			}
			r.mu.Unlock()
			continue
		}
		go func() {
			if resp := r.handle(cmd, raw, send); resp != nil {
				resp.Opaque = cmd.Opaque
				resp.Flag = protocol.FlagResponse
				send(resp)
			}
		}()
	}
}

// keep records raw under name; with preferLarger a later, larger frame
// replaces an earlier one (heartbeats grow as groups start). Callers hold mu.
func (r *recorder) keep(name string, raw []byte, preferLarger bool) {
	if old := r.frames[name]; old == nil || (preferLarger && len(raw) > len(old)) {
		r.frames[name] = raw
	}
}

func (r *recorder) record(name string, raw []byte, preferLarger bool) {
	r.mu.Lock()
	r.keep(name, raw, preferLarger)
	r.mu.Unlock()
}

func ok(req *protocol.Command) *protocol.Command {
	return protocol.NewResponse(req, protocol.Success, "")
}

func (r *recorder) handle(req *protocol.Command, raw []byte, send func(*protocol.Command)) *protocol.Command {
	switch req.Code {
	case protocol.GetRouteInfoByTopic:
		r.record("105-get-route-info-by-topic", raw, false)
		resp := ok(req)
		route := protocol.TopicRouteData{
			QueueDatas: []protocol.QueueData{{BrokerName: brokerName, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}},
			BrokerDatas: []protocol.BrokerData{{Cluster: clusterName, BrokerName: brokerName,
				BrokerAddrs: map[int64]string{0: r.addr.String()}}},
		}
		resp.Body = route.Encode()
		return resp

	case protocol.HeartBeat:
		hb, err := protocol.DecodeHeartbeatData(req.Body)
		if err == nil && len(hb.ConsumerDataSet) > 0 {
			r.record("34-heart-beat", raw, true)
			r.mu.Lock()
			r.clientID = hb.ClientID
			push := !r.pushedRI
			r.pushedRI = true
			r.mu.Unlock()
			if push {
				go r.push(send, protocol.GetConsumerRunningInfo, "307-reply-consumer-running-info",
					(&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: consumerGrp, ClientID: hb.ClientID}).Encode(), nil)
			}
		} else {
			r.record("34-heart-beat-producer", raw, true)
		}
		return ok(req)

	case protocol.SendMessage, protocol.SendBatchMessage, protocol.SendReplyMessage:
		h, err := protocol.DecodeSendRequest(req)
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		name := map[int16]string{protocol.SendMessage: "10-send-message", protocol.SendBatchMessage: "320-send-batch-message",
			protocol.SendReplyMessage: "324-send-reply-message"}[req.Code]
		half := protocol.TxType(h.SysFlag) == protocol.SysFlagTxPrepared
		if half {
			name = "10-send-message-half"
		}
		r.record(name, raw, false)
		r.mu.Lock()
		off := r.nextOff
		r.nextOff += 100
		r.mu.Unlock()
		resp := ok(req)
		hdr := protocol.SendMessageResponseHeader{MsgID: protocol.OffsetMsgID(r.addr, off), QueueID: h.QueueID,
			QueueOffset: 7, MsgRegion: "DefaultRegion", TraceOn: true}
		resp.ExtFields = hdr.Encode()
		if half {
			go r.pushCheck(send, h, off)
		}
		return resp

	case protocol.PullMessage:
		r.record("11-pull", raw, false)
		h, err := protocol.DecodePullRequest(req)
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		key := fmt.Sprintf("%s@%d@%s", h.Topic, h.QueueID, h.ConsumerGroup)
		r.mu.Lock()
		first := !r.pulled[key] && h.Topic == topic && h.QueueID == 0
		r.pulled[key] = true
		r.mu.Unlock()
		if first {
			body, err := r.storedMessage(topic, 0, h.QueueOffset, map[string]string{protocol.PropTags: "TagA",
				protocol.PropUniqKey: "7F00000100002A9F0000000000000001"})
			if err != nil {
				return protocol.NewResponse(req, protocol.SystemError, err.Error())
			}
			resp := ok(req)
			resp.ExtFields = (&protocol.PullMessageResponseHeader{NextBeginOffset: h.QueueOffset + 1,
				MaxOffset: h.QueueOffset + 1}).Encode()
			resp.Body = body
			return resp
		}
		// Hold the pull a little so the client does not spin.
		time.Sleep(time.Second)
		resp := protocol.NewResponse(req, protocol.PullNotFound, "")
		resp.ExtFields = (&protocol.PullMessageResponseHeader{NextBeginOffset: h.QueueOffset, MaxOffset: h.QueueOffset}).Encode()
		return resp

	case protocol.QueryConsumerOffset:
		r.record("14-query-consumer-offset", raw, false)
		return protocol.NewResponse(req, protocol.QueryNotFound, "no offset")

	case protocol.UpdateConsumerOffset:
		r.record("15-update-consumer-offset", raw, false)
		return ok(req)

	case protocol.SearchOffsetByTimestamp, protocol.GetMaxOffset:
		r.record(map[int16]string{protocol.SearchOffsetByTimestamp: "29-search-offset-by-timestamp",
			protocol.GetMaxOffset: "30-get-max-offset"}[req.Code], raw, false)
		resp := ok(req)
		resp.ExtFields = (&protocol.OffsetResponseHeader{Offset: 0}).Encode()
		return resp

	case protocol.ConsumerSendMsgBack:
		r.record("36-consumer-send-msg-back", raw, false)
		return ok(req)

	case protocol.EndTransaction:
		var h protocol.EndTransactionRequestHeader
		_ = h.Decode(req.ExtFields)
		if h.FromTransactionCheck {
			r.record("37-end-transaction-check", raw, false)
		} else {
			r.record("37-end-transaction", raw, false)
		}
		return ok(req)

	case protocol.GetConsumerListByGroup:
		r.record("38-get-consumer-list-by-group", raw, false)
		r.mu.Lock()
		id := r.clientID
		r.mu.Unlock()
		resp := ok(req)
		resp.Body = (&protocol.GetConsumerListByGroupResponseBody{ConsumerIDList: []string{id}}).Encode()
		return resp

	case protocol.LockBatchMQ:
		r.record("41-lock-batch-mq", raw, false)
		b, err := protocol.DecodeLockBatchRequestBody(req.Body)
		if err != nil {
			return protocol.NewResponse(req, protocol.SystemError, err.Error())
		}
		resp := ok(req)
		resp.Body = (&protocol.LockBatchResponseBody{LockOKMQSet: b.MQSet}).Encode()
		return resp

	case protocol.UnlockBatchMQ:
		r.record("42-unlock-batch-mq", raw, false)
		return ok(req)

	case protocol.UpdateAndCreateTopic:
		r.record("17-update-and-create-topic", raw, false)
		return ok(req)

	case protocol.DeleteTopicInBroker:
		r.record("215-delete-topic-in-broker", raw, false)
		return ok(req)

	case protocol.DeleteTopicInNameServer:
		r.record("216-delete-topic-in-namesrv", raw, false)
		return ok(req)

	case protocol.GetAllTopicListFromNameServer:
		r.record("206-get-all-topic-list-from-namesrv", raw, false)
		resp := ok(req)
		resp.Body = (&protocol.TopicList{TopicList: []string{topic, "newOne"}}).Encode()
		return resp

	case protocol.GetAllSubscriptionGroupConfig:
		r.record("201-get-all-subscriptiongroup-config", raw, false)
		resp := ok(req)
		resp.Body = (&protocol.SubscriptionGroupWrapper{
			SubscriptionGroupTable: map[string]protocol.SubscriptionGroupConfig{consumerGrp: protocol.DefaultSubscriptionGroupConfig(consumerGrp)},
			DataVersion:            protocol.DataVersion{Timestamp: time.Now().UnixMilli(), Counter: 1},
		}).Encode()
		return resp
	}
	r.record(fmt.Sprintf("%d-unknown", req.Code), raw, false)
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported, fmt.Sprintf("request type %d not supported", req.Code))
}

// storedMessage builds one stored-format record as a pull body.
func (r *recorder) storedMessage(topic string, queueID int32, queueOffset int64, props map[string]string) ([]byte, error) {
	r.mu.Lock()
	off := r.nextOff
	r.nextOff += 100
	r.mu.Unlock()
	now := time.Now().UnixMilli()
	m := &protocol.MessageExt{
		Message: protocol.Message{Topic: topic, Properties: props, Body: []byte("pulled")},
		QueueID: queueID, QueueOffset: queueOffset, CommitLogOffset: off,
		BornTimestamp: now, BornHost: netip.MustParseAddrPort("127.0.0.1:50000"),
		StoreTimestamp: now, StoreHost: r.addr,
	}
	return protocol.AppendStored(nil, m, protocol.EncodeProperties(props))
}

// pushCheck sends CHECK_TRANSACTION_STATE for a half message, once.
func (r *recorder) pushCheck(send func(*protocol.Command), h *protocol.SendMessageRequestHeader, off int64) {
	r.mu.Lock()
	if r.pushedTx {
		r.mu.Unlock()
		return
	}
	r.pushedTx = true
	r.mu.Unlock()
	props := protocol.DecodeProperties(h.Properties)
	body, err := r.storedMessage(h.Topic, h.QueueID, 7, props)
	if err != nil {
		r.log.Error("check body", "err", err)
		return
	}
	uniq := props[protocol.PropUniqKey]
	hdr := protocol.CheckTransactionStateRequestHeader{TranStateTableOffset: 7, CommitLogOffset: off,
		MsgID: uniq, TransactionID: uniq, OffsetMsgID: protocol.OffsetMsgID(r.addr, off)}
	// The client does not reply to 39; its END_TRANSACTION is recorded.
	time.Sleep(200 * time.Millisecond)
	r.push(send, protocol.CheckTransactionState, "", hdr.Encode(), body)
}

// push sends a broker-to-client request; replyName, when set, is where the
// client's reply is recorded.
func (r *recorder) push(send func(*protocol.Command), code int16, replyName string, ext map[string]string, body []byte) {
	r.mu.Lock()
	r.opaque++
	op := r.opaque
	if replyName != "" {
		r.pushed[op] = replyName
	}
	r.mu.Unlock()
	req := protocol.NewRequest(code, ext, body)
	req.Opaque = op
	send(req)
}
