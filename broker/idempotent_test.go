package broker_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// initProducer asks for a producer id; instance "" for a fresh one.
func (e *env) initProducer(group, instance string) (int64, int64) {
	e.t.Helper()
	resp := e.invoke(protocol.NewRequest(protocol.TideInitProducerID,
		(&protocol.InitProducerIDRequestHeader{ProducerGroup: group, InstanceName: instance}).Encode(), nil))
	if resp.Code != protocol.Success {
		e.t.Fatalf("init producer id: %d %s", resp.Code, resp.Remark)
	}
	var h protocol.InitProducerIDResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		e.t.Fatal(err)
	}
	return h.ProducerID, h.Epoch
}

// stampedSend sends n messages (a batch when n > 1) with stamps from seq
// and UNIQ_KEYs "<seq>-u".
func (e *env) stampedSend(topic string, queue int32, id, epoch, seq int64, n int) *protocol.Command {
	e.t.Helper()
	return e.stampedSendKey(topic, queue, id, epoch, seq, n, "-u")
}

// stampedSendKey is stampedSend with UNIQ_KEYs "<seq><suffix>", none if
// suffix is empty.
func (e *env) stampedSendKey(topic string, queue int32, id, epoch, seq int64, n int, suffix string) *protocol.Command {
	e.t.Helper()
	h := protocol.SendMessageRequestHeaderV2{ProducerGroup: "pg", Topic: topic, DefaultTopic: protocol.DefaultTopicTemplate,
		DefaultTopicQueueNums: 4, QueueID: queue, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: -1}
	stamp := func(i int) map[string]string {
		p := map[string]string{}
		if suffix != "" {
			p[protocol.PropUniqKey] = strconv.FormatInt(seq+int64(i), 10) + suffix
		}
		if id != 0 {
			p[protocol.PropProducerStamp] = protocol.ProducerStamp{ProducerID: id, Epoch: epoch, Sequence: seq + int64(i)}.String()
		}
		return p
	}
	if n == 1 {
		h.Properties = protocol.EncodeProperties(stamp(0))
		return e.invoke(protocol.NewRequest(protocol.SendMessageV2, h.Encode(), []byte("body")))
	}
	items := make([]protocol.BatchItem, n)
	for i := range items {
		items[i] = protocol.BatchItem{Body: []byte("b" + strconv.Itoa(i)), Properties: protocol.EncodeProperties(stamp(i))}
	}
	h.Batch = true
	body, err := protocol.AppendBatch(nil, items)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.invoke(protocol.NewRequest(protocol.SendBatchMessage, h.Encode(), body))
}

func sendResult(t *testing.T, resp *protocol.Command) protocol.SendMessageResponseHeader {
	t.Helper()
	if resp.Code != protocol.Success {
		t.Fatalf("send: %d %s", resp.Code, resp.Remark)
	}
	var h protocol.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestIdempotentSendDropsRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	topic := uniq("Idem")
	id, ep := e.initProducer("pg", "")
	first := sendResult(t, e.stampedSend(topic, 1, id, ep, 0, 1))
	again := sendResult(t, e.stampedSend(topic, 1, id, ep, 0, 1))
	if again != first {
		t.Errorf("retry answered %+v, first send %+v", again, first)
	}
	batch := sendResult(t, e.stampedSend(topic, 1, id, ep, 1, 3))
	batchAgain := sendResult(t, e.stampedSend(topic, 1, id, ep, 1, 3))
	if batchAgain != batch || len(strings.Split(batch.MsgID, ",")) != 3 {
		t.Errorf("batch retry answered %+v, first %+v", batchAgain, batch)
	}
	// a later sequence after a gap (a retry went to another queue) is stored
	sendResult(t, e.stampedSend(topic, 1, id, ep, 10, 1))
	// another queue has its own sequences
	sendResult(t, e.stampedSend(topic, 2, id, ep, 0, 1))
	eventually(t, 5*time.Second, "dispatch", func() bool { return e.maxOffset(topic, 1) == 5 && e.maxOffset(topic, 2) == 1 })
	// evict seq 0 from the window: 5 more runs
	for s := int64(11); s < 16; s++ {
		sendResult(t, e.stampedSend(topic, 1, id, ep, s, 1))
	}
	// a retry the window forgot is found by its UNIQ_KEY in the index
	eventually(t, 5*time.Second, "dispatch", func() bool { return e.maxOffset(topic, 1) == 10 })
	if got := sendResult(t, e.stampedSend(topic, 1, id, ep, 0, 1)); got != first {
		t.Errorf("retry of a forgotten sequence answered %+v, first send %+v", got, first)
	}
	if got := sendResult(t, e.stampedSend(topic, 1, id, ep, 1, 3)); got != batch {
		t.Errorf("retry of a forgotten batch answered %+v, first send %+v", got, batch)
	}
	// without a UNIQ_KEY the broker cannot tell
	if resp := e.stampedSendKey(topic, 1, id, ep, 0, 1, ""); resp.Code != protocol.TideSequenceOutOfOrder {
		t.Errorf("a forgotten sequence without UNIQ_KEY answered %d %s", resp.Code, resp.Remark)
	}
	// a forgotten sequence never stored (its answer said it failed) is stored now
	sendResult(t, e.stampedSendKey(topic, 1, id, ep, 5, 1, "-never"))
	// a bad stamp is refused with a reason
	if resp := e.stampedSend(topic, 1, -1, ep, 0, 1); resp.Code != protocol.MessageIllegal || !strings.Contains(resp.Remark, protocol.PropProducerStamp) {
		t.Errorf("bad stamp answered %d %s", resp.Code, resp.Remark)
	}
	eventually(t, 5*time.Second, "dispatch of queue 1", func() bool { return e.maxOffset(topic, 1) >= 11 })
	if got := e.maxOffset(topic, 1); got != 11 {
		t.Errorf("queue 1 holds %d messages, want 11", got)
	}
}

func TestIdempotentFencing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) { o.MetricsListenAddr = "127.0.0.1:0" })
	topic := uniq("Fence")
	old, oldEp := e.initProducer("orders", "orders-1")
	sendResult(t, e.stampedSend(topic, 0, old, oldEp, 0, 1))
	id, ep := e.initProducer("orders", "orders-1")
	if id != old || ep <= oldEp {
		t.Fatalf("second instance got %d/%d, first %d/%d", id, ep, old, oldEp)
	}
	resp := e.stampedSend(topic, 0, old, oldEp, 1, 1)
	if resp.Code != protocol.TideProducerFenced {
		t.Fatalf("zombie send answered %d %s", resp.Code, resp.Remark)
	}
	sendResult(t, e.stampedSend(topic, 0, id, ep, 0, 1))
	sendResult(t, e.stampedSend(topic, 0, id, ep, 0, 1)) // a retry
	if other, _ := e.initProducer("orders", "orders-2"); other == id {
		t.Error("two instance names share a producer id")
	}
	hr, err := http.Get("http://" + e.b.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer hr.Body.Close()
	body, _ := io.ReadAll(hr.Body)
	for _, want := range []string{"tide_broker_idempotent_fenced_total 1", "tide_broker_idempotent_duplicates_total 1", "tide_broker_idempotent_producers 2"} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestIdempotentStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, snapshot := range []bool{true, false} {
		t.Run("snapshot="+strconv.FormatBool(snapshot), func(t *testing.T) {
			dir := t.TempDir()
			withDir := func(o *broker.Options) { o.Store.StorePathRootDir = dir }
			e := newEnv(t, withDir)
			topic := uniq("IdemRestart")
			id, ep := e.initProducer("pg", "")
			want := make([]protocol.SendMessageResponseHeader, 4)
			for s := range want {
				want[s] = sendResult(t, e.stampedSend(topic, 0, id, ep, int64(s), 1))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := e.b.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			snap := filepath.Join(dir, "config", "producerState.json")
			if _, err := os.Stat(snap); err != nil {
				t.Fatalf("no snapshot after shutdown: %v", err)
			}
			if !snapshot {
				os.Remove(snap)
				os.Remove(snap + ".bak")
			}
			e.raw.CloseConn(e.addr)
			e.b = brokertest.Start(t, e.ns, withDir)
			e.addr = e.b.Addr()
			for s := range want {
				if got := sendResult(t, e.stampedSend(topic, 0, id, ep, int64(s), 1)); got.QueueOffset != want[s].QueueOffset {
					t.Errorf("retry of seq %d after restart answered offset %d, first %d", s, got.QueueOffset, want[s].QueueOffset)
				}
			}
			sendResult(t, e.stampedSend(topic, 0, id, ep, 4, 1))
			eventually(t, 5*time.Second, "dispatch", func() bool { return e.maxOffset(topic, 0) >= 5 })
			if got := e.maxOffset(topic, 0); got != 5 {
				t.Errorf("queue holds %d messages, want 5", got)
			}
		})
	}
}

func TestIdempotentOffWithoutExtensions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) { o.TideExtensions = false })
	resp := e.invoke(protocol.NewRequest(protocol.TideInitProducerID, (&protocol.InitProducerIDRequestHeader{ProducerGroup: "pg"}).Encode(), nil))
	if resp.Code != protocol.RequestCodeNotSupported {
		t.Fatalf("init producer id without extensions: %d %s", resp.Code, resp.Remark)
	}
	topic := uniq("IdemOff")
	a := sendResult(t, e.stampedSend(topic, 0, 7, 1, 0, 1))
	b := sendResult(t, e.stampedSend(topic, 0, 7, 1, 0, 1))
	if a.QueueOffset == b.QueueOffset {
		t.Error("a RocketMQ 4.9 broker dropped a stamped message")
	}
}

// TestIdempotentRetryAsDurableAsStored: a retry of a stamped send that was
// stored but not replicated (a SYNC_MASTER without its slave answers
// SLAVE_NOT_AVAILABLE) is answered with the same status, not SEND_OK: the
// copy is on the master only. SEND_OK told the client it would survive a
// failover (chaos finding 8: controller mode, seed 20261206, 7 SEND_OK
// retries lost with the old master's tail).
func TestIdempotentRetryAsDurableAsStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *broker.Options) { o.BrokerRole = "SYNC_MASTER" })
	topic := uniq("IdemSync")
	id, ep := e.initProducer("pg", "")
	first := e.stampedSend(topic, 1, id, ep, 0, 1)
	if first.Code != protocol.SlaveNotAvailable {
		t.Fatalf("first send without a slave answered %d %s", first.Code, first.Remark)
	}
	again := e.stampedSend(topic, 1, id, ep, 0, 1)
	if again.Code != first.Code {
		t.Errorf("retry answered %d %s, the stored copy is still not replicated (first: %d)", again.Code, again.Remark, first.Code)
	}
	eventually(t, 5*time.Second, "dispatch", func() bool { return e.maxOffset(topic, 1) == 1 })
}
