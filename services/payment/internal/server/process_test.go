package server

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/pkg/mqclient/metrics"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
	"github.com/tidemq/tide/services/payment/internal/data"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

// TestCrashChild is the payment process killed by crash_after_commit in
// TestFlowCrashAfterCommitProcess; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	if os.Getenv("PAYMENT_CRASH_CHILD") != "1" {
		t.Skip("helper process")
	}
	l := slog.New(slog.NewTextHandler(os.Stderr, nil))
	d, _, err := data.NewData(&kitconf.Data{Database: &kitconf.Data_Database{Source: os.Getenv("PAYMENT_CRASH_DSN")},
		Redis: &kitconf.Data_Redis{Addr: os.Getenv("PAYMENT_CRASH_REDIS")}}, l)
	if err != nil {
		t.Fatal(err)
	}
	faults := fault.New(map[string]fault.Spec{fault.CrashAfterCommit: {Enabled: true}}, os.Exit, l)
	reg := prometheus.NewRegistry()
	mm, _ := metrics.New(reg)
	m := &conf.Messaging{NameServers: os.Getenv("PAYMENT_CRASH_NS"), ProducerGroup: eventv1.GroupPaymentProducer}
	mc, _, err := data.NewMQClient(m, l)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, err := data.NewPublisher(m, mc, d, faults, reg, mm, l)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := data.NewIdempotencyStore(d, reg, l)
	if err != nil {
		t.Fatal(err)
	}
	gw := data.NewGateway(d, faults, l)
	orders, _, err := data.NewOrderReader(&kitconf.Peer{GrpcAddr: os.Getenv("PAYMENT_CRASH_ORDERS")})
	if err != nil {
		t.Fatal(err)
	}
	uc := biz.NewPaymentUsecase(data.NewAccountRepo(d), data.NewPaymentRepo(d), keys, gw, orders, d, pub, faults, biz.Options{}, l)
	_, err = uc.CreatePayment(context.Background(), &biz.CreateRequest{IdempotencyKey: "proc-1", OrderID: "op1", UserID: "u-bob", Amount: 42})
	t.Fatalf("the process survived crash_after_commit: %v", err)
}

// A real process exits (os.Exit(3)) after its commit, before
// END_TRANSACTION; the surviving instance of the producer group answers
// the broker's check-back from the fence: the event is delivered once.
func TestFlowCrashAfterCommitProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	s := startStack(t)
	before := balance(t, s, "u-bob")
	s.orders.add("op1", "u-bob", 42)
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PAYMENT_CRASH_CHILD=1", "PAYMENT_CRASH_DSN="+s.dsn, "PAYMENT_CRASH_REDIS="+s.redisAddr, "PAYMENT_CRASH_NS="+s.ns,
		"PAYMENT_CRASH_ORDERS="+s.ordersAddr)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fault.ExitCode {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if got := before - balance(t, s, "u-bob"); got != 42 {
		t.Fatalf("debited %d, want 42 (committed before the crash)", got)
	}
	waitFor(t, "PaymentSucceeded through the check-back", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "op1") == 1 })
	// The next event of the queue arrives after it; still one for op1.
	if r := s.pay(t, "proc-2", "op2", "u-bob", 1); r.status != 200 {
		t.Fatalf("next payment: %d %s", r.status, r.raw)
	}
	waitFor(t, "next event", func() bool { return s.events.n(eventv1.TagPaymentSucceeded, "op2") == 1 })
	if n := s.events.n(eventv1.TagPaymentSucceeded, "op1"); n != 1 {
		t.Fatalf("%d PaymentSucceeded for op1, want 1", n)
	}
}
