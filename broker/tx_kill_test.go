package broker_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/tidemq/tide/broker/brokertest"
	"github.com/tidemq/tide/nameserver/nameservertest"
)

// blockingListener never finishes its local transaction: the child
// process is killed while it runs, after the half message was stored.
type blockingListener struct{ started chan struct{} }

func (l *blockingListener) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	close(l.started)
	select {}
}

func (l *blockingListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	return primitive.UnknowState
}

// TestTxChildProducer is the child process of TestTransactionProducerKilled;
// it does nothing in a normal run.
func TestTxChildProducer(t *testing.T) {
	ns := os.Getenv("TIDE_TX_CHILD_NAMESRV")
	if ns == "" {
		t.Skip("child process of TestTransactionProducerKilled")
	}
	l := &blockingListener{started: make(chan struct{})}
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("killpg"), producer.WithInstanceName("child"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(os.Getenv("TIDE_TX_CHILD_KEYS"), ",") {
		l.started = make(chan struct{})
		go p.SendMessageInTransaction(context.Background(), primitive.NewMessage("KillTopic", []byte(k)).WithKeys([]string{k}))
		<-l.started
		fmt.Println("HALF-STORED", k)
	}
	select {} // killed by the parent
}

// TestTransactionProducerKilled kills a producer (SIGKILL) after its half
// messages were stored and before END_TRANSACTION; a new producer instance
// of the same group answers the check-backs: the committed one is
// delivered exactly once, the rolled-back one never.
func TestTransactionProducerKilled(t *testing.T) {
	ns := nameservertest.Start(t)
	b := brokertest.Start(t, ns, fastTx)
	if err := createTopic(b.Addr(), "KillTopic", 4); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, "KillTopic")

	cmd := exec.Command(os.Args[0], "-test.run=^TestTxChildProducer$", "-test.v")
	cmd.Env = append(os.Environ(), "TIDE_TX_CHILD_NAMESRV="+ns, "TIDE_TX_CHILD_KEYS=commit-me,roll-me")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stored := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		var acc strings.Builder
		for {
			n, err := out.Read(buf)
			acc.Write(buf[:n])
			if strings.Count(acc.String(), "HALF-STORED") == 2 {
				close(stored)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-stored:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("child did not store its half messages")
	}
	cmd.Process.Kill() // SIGKILL: no END_TRANSACTION, no clean disconnect
	cmd.Wait()
	if n := len(halfList(t, b.Addr())); n != 2 {
		t.Fatalf("pending half messages = %d, want 2", n)
	}

	// A new instance of the producer group answers the check-backs.
	l := &decideByBody{}
	p, err := rocketmq.NewTransactionProducer(l, producer.WithNsResolver(primitive.NewPassthroughResolver([]string{ns})),
		producer.WithGroupName("killpg"), producer.WithInstanceName("survivor"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	// A producer heartbeats only to brokers it knows from a route: like a
	// real service it sends (here a transaction it rolls back at once).
	if _, err := p.SendMessageInTransaction(context.Background(), primitive.NewMessage("KillTopic", []byte("warmup"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "check-backs resolved both half messages", 30*time.Second, func() bool { return len(halfList(t, b.Addr())) == 0 })
	// the decision is recorded before the committed copy is stored and dispatched
	waitFor(t, "the committed message", 10*time.Second, func() bool { return topicTotal(t, b.Addr(), "KillTopic", 4) >= 1 })
	if got := topicTotal(t, b.Addr(), "KillTopic", 4); got != 1 {
		t.Fatalf("visible messages = %d, want exactly 1", got)
	}
}

type decideByBody struct{}

func (l *decideByBody) ExecuteLocalTransaction(*primitive.Message) primitive.LocalTransactionState {
	return primitive.RollbackMessageState
}

func (l *decideByBody) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	if string(m.Body) == "commit-me" {
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}
