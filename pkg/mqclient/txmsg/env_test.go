package txmsg

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/tidemq/tide/broker"
	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/remoting"
	"github.com/tidemq/tide/pkg/remoting/protocol"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

func init() {
	if os.Getenv("TIDE_TEST_LOG") == "" { // the driver logs dropped connections, which tests cause on purpose
		gomysql.SetLogger(log.New(io.Discard, "", 0))
	}
}

// env is the shared in-process harness (pkg/tidetest) with a broker doing
// fast transaction checks, a MariaDB database with the fence and a
// payments table, a topic and a consumer that records deliveries by
// transaction key.
type env struct {
	*tidetest.Env
	my    testenv.MySQL
	db    *gorm.DB
	topic string
	group string
	rec   *recorder
}

var seq atomic.Int64

func startEnv(t *testing.T, opts ...func(*broker.Options)) *env {
	t.Helper()
	e := &env{group: fmt.Sprintf("txmsg-%d", seq.Add(1))}
	e.Env = tidetest.Start(t, func(o *broker.Options) {
		o.TransactionTimeOut = 300
		o.TransactionCheckInterval = 300
		o.TransactionCheckMax = 200
		for _, f := range opts {
			f(o)
		}
	})
	e.my = testenv.MariaDB(t) // its first start may take long on a loaded machine: before the topic's deadline
	e.topic = e.CreateTopic(t, "pay-", mqclient.TopicConfig{Queues: 2})
	ctx := context.Background()
	e.db = openDB(t, e.my.DSN)
	if err := Migrate(ctx, e.db, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Exec("CREATE TABLE payments (id VARCHAR(64) PRIMARY KEY, amount INT NOT NULL) ENGINE=InnoDB").Error; err != nil {
		t.Fatal(err)
	}
	e.rec = &recorder{byKey: map[string]map[string]int{}}
	e.Consumer(t, "g-"+e.topic, e.topic, e.rec.handle, mqclient.WithConsumeFrom(mqclient.ConsumeFromFirst))
	return e
}

func openDB(t testing.TB, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		t.Cleanup(func() { sqlDB.Close() })
	}
	return db
}

// sender starts a Sender of the env's group on db (e.db when nil).
func (e *env) sender(t *testing.T, db *gorm.DB, opts ...Option) *Sender {
	t.Helper()
	if db == nil {
		db = e.db
	}
	opts = append([]Option{WithGroup(e.group), WithCheckTimeout(time.Second), WithLogger(tidetest.Logger()),
		WithProducerOptions(e.Options()...)}, opts...)
	s, err := New(db, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

// warm makes s known to the broker (its producer heartbeats only to
// brokers of topics it has sent to) with one committed send, and returns
// the key used. See the package doc: an instance answers check-backs only
// once it knows the broker.
func (e *env) warm(t *testing.T, s *Sender) string {
	t.Helper()
	key := fmt.Sprintf("warm-%d", seq.Add(1))
	if _, err := s.Send(context.Background(), e.msg("warm"), key, pay(key, 0)); err != nil {
		t.Fatalf("warm-up send: %v", err)
	}
	return key
}

func pay(id string, amount int) func(tx *gorm.DB) error {
	return func(tx *gorm.DB) error {
		return tx.Exec("INSERT INTO payments (id, amount) VALUES (?, ?)", id, amount).Error
	}
}

func (e *env) msg(body string) *mqclient.Message {
	return &mqclient.Message{Topic: e.topic, Tag: "paid", Body: []byte(body)}
}

// recorder counts deliveries per transaction key and message id.
type recorder struct {
	mu    sync.Mutex
	byKey map[string]map[string]int
}

func (r *recorder) handle(_ context.Context, m *mqclient.MessageExt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := m.Properties[PropKey]
	if r.byKey[k] == nil {
		r.byKey[k] = map[string]int{}
	}
	r.byKey[k][m.MsgID]++
	return nil
}

// distinct is the number of distinct messages delivered for key.
func (r *recorder) distinct(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byKey[key])
}

func (e *env) invoke(t *testing.T, req *protocol.Command) *protocol.Command {
	t.Helper()
	cl := remoting.NewClient(remoting.ClientOptions{Logger: tidetest.Logger()})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, e.Broker.Addr(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Err(); err != nil {
		t.Fatal(err)
	}
	return resp
}

// pending lists the env topic's unresolved half messages.
func (e *env) pending(t *testing.T) []protocol.HalfMessage {
	t.Helper()
	// in process, not through Tide's request code: the suite also runs
	// against a broker without Tide extensions (TIDE_BROKER_EXTENSIONS=off)
	var out []protocol.HalfMessage
	for _, h := range e.Broker.HalfMessages() {
		if h.Topic == e.topic {
			out = append(out, h)
		}
	}
	return out
}

// endTx sends a (late) END_TRANSACTION for a half message, as a producer
// that outlived its decision would.
func (e *env) endTx(t *testing.T, h protocol.HalfMessage, state mqclient.TransactionState) string {
	t.Helper()
	code := protocol.SysFlagTxRollback
	if state == mqclient.TransactionCommit {
		code = protocol.SysFlagTxCommit
	}
	eh := protocol.EndTransactionRequestHeader{ProducerGroup: h.ProducerGroup, TranStateTableOffset: h.QueueOffset,
		CommitLogOffset: h.CommitLogOffset, CommitOrRollback: code, MsgID: h.MsgID, TransactionID: h.MsgID}
	return e.invoke(t, protocol.NewRequest(protocol.EndTransaction, eh.Encode(), nil)).Remark
}

// copies counts the visible (committed) messages of key on the topic.
func (e *env) copies(t *testing.T, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ms, err := e.Admin.QueryByKey(ctx, e.topic, key, 64, time.UnixMilli(0), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatalf("query %s: %v", key, err)
	}
	n := 0
	for _, m := range ms {
		if m.Properties[PropKey] == key {
			n++
		}
	}
	return n
}

// invariant waits until no half message of the topic is pending, then
// checks, for every key: fence committed <=> exactly one visible copy,
// delivered (and the payment row exists); otherwise no copy, no delivery,
// no payment row.
func (e *env) invariant(t *testing.T, keys ...string) {
	t.Helper()
	tidetest.WaitFor(t, 30*time.Second, "all half messages resolved", func() bool {
		for _, h := range e.pending(t) {
			if h.Parked {
				t.Fatalf("half message %s parked after %d checks", h.MsgID, h.Checks)
			}
		}
		return len(e.pending(t)) == 0
	})
	var committed []string
	for _, k := range keys {
		var st string
		e.db.Raw("SELECT status FROM "+DefaultTable+" WHERE tx_key = ?", k).Scan(&st)
		var pays int64
		e.db.Raw("SELECT COUNT(*) FROM payments WHERE id = ?", k).Scan(&pays)
		if Status(st) == StatusCommitted {
			committed = append(committed, k)
			if pays != 1 {
				t.Errorf("%s: fence committed but %d payment rows", k, pays)
			}
			continue
		}
		if n := e.copies(t, k); n != 0 {
			t.Errorf("FORBIDDEN: %s: fence %q (not committed) but %d visible copies", k, st, n)
		}
		if n := e.rec.distinct(k); n != 0 {
			t.Errorf("FORBIDDEN: %s: fence %q (not committed) but %d messages delivered", k, st, n)
		}
		if pays != 0 {
			t.Errorf("%s: fence %q but payment row committed", k, st)
		}
	}
	// All decisions are taken: a committed key whose message is never
	// delivered fails here (FORBIDDEN: committed but rolled back).
	tidetest.WaitFor(t, 30*time.Second, "committed messages delivered", func() bool {
		for _, k := range committed {
			if e.rec.distinct(k) == 0 {
				return false
			}
		}
		return true
	})
	for _, k := range committed {
		if n := e.rec.distinct(k); n != 1 {
			t.Errorf("%s: %d distinct messages delivered, want 1", k, n)
		}
		var n int
		tidetest.WaitFor(t, 5*time.Second, "the index of "+k, func() bool { n = e.copies(t, k); return n > 0 })
		if n != 1 {
			t.Errorf("%s: fence committed but %d visible copies", k, n)
		}
	}
}

// child runs TestChild in a new process that sends one transactional
// message for key and blocks at point; it is killed with SIGKILL as soon as
// it prints that it got there.
func (e *env) child(t *testing.T, key, point string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "TXMSG_CHILD="+point, "TXMSG_DSN="+e.my.DSN, "TXMSG_NS="+e.NameServer,
		"TXMSG_TOPIC="+e.topic, "TXMSG_KEY="+key, "TXMSG_GROUP="+e.group)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reached := make(chan bool, 1)
	var lines []string
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			lines = append(lines, s.Text())
			if s.Text() == "TXMSG-REACHED "+point {
				reached <- true
				io.Copy(io.Discard, out)
				return
			}
		}
		reached <- false
	}()
	select {
	case ok := <-reached:
		if !ok {
			cmd.Wait()
			t.Fatalf("child exited before %s: %s", point, strings.Join(lines, "\n"))
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not reach %s", point)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
}

// proxy is a TCP proxy to the database that a test can stop (the database
// is unreachable: an outage) and start again on the same address.
type proxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{target: target, conns: map[net.Conn]bool{}}
	// start binds the address again after a stop: a port outside the
	// kernel's ephemeral range is not taken by another connection meanwhile
	ln, err := net.Listen("tcp", testenv.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[u] = true, true
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close(); c.Close() }()
			go func() { io.Copy(c, u); u.Close(); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *proxy) start(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// dsnVia returns dsn with its address replaced.
func dsnVia(t *testing.T, dsn, addr string) string {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Addr = addr
	return cfg.FormatDSN()
}
