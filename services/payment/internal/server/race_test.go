package server

import (
	"testing"
	"time"

	eventv1 "github.com/tidemq/tide/api/event/v1"
	"github.com/tidemq/tide/services/payment/internal/biz"
)

// consumedOK is how many OrderCancelled deliveries the service's
// consumer handled successfully (mqclient_consumed_total, result ok).
func (s *stack) consumedOK(t *testing.T) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "mqclient_consumed_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["topic"] == eventv1.TopicOrderEvents && l["group"] == eventv1.GroupPayment && l["result"] == "ok" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// running counts the statements of the service's database that other
// sessions are running whose text matches like (SQL LIKE). A statement
// that can only wait for a lock the test holds stays there until the
// lock is released.
func (s *stack) running(t *testing.T, like string) int64 {
	t.Helper()
	var n int64
	err := s.d.Gorm().Raw(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE ?`, like).Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An OrderCancelled handled while the order's payment transaction is
// still open (issue 9, found by the e2e random-faults scenario: the
// payment committed just after the cancellation was handled and was
// never refunded). The test holds the payment's local transaction open
// after its payment row went in (the test locks the payer's account
// row, so the debit waits), delivers OrderCancelled, waits until the
// handler either finished (the bug) or waits for the order's lock (the
// fix), then lets the payment commit. The payment must end REFUNDED,
// once, with the balance restored.
func TestFlowCancelWhilePaymentOpen(t *testing.T) {
	s := startStack(t)
	// The consumer is running before the payment's transaction opens,
	// so that the race is not bounded by the local transaction timeout.
	s.cancelOrder(t, "or-warm")
	waitFor(t, "warm-up cancellation handled", func() bool { return s.consumedOK(t) >= 1 })
	handled := s.consumedOK(t)

	const user, order, key, amount = "u-carol", "or1", "race-1", 400
	before := balance(t, s, user)
	hold := s.d.Gorm().Begin()
	if hold.Error != nil {
		t.Fatal(hold.Error)
	}
	released := false
	defer func() {
		if !released {
			hold.Rollback()
		}
	}()
	var locked int64
	if err := hold.Raw("SELECT balance FROM accounts WHERE user_id = ? FOR UPDATE", user).Scan(&locked).Error; err != nil {
		t.Fatal(err)
	}
	done := s.payAsync(key, order, user, amount)
	waitFor(t, "the payment's debit waiting for the account", func() bool { return s.running(t, "UPDATE accounts%") == 1 })

	s.cancelOrder(t, order)
	waitFor(t, "OrderCancelled handled or waiting for the order's lock", func() bool {
		return s.consumedOK(t) > handled || s.running(t, "INSERT INTO order_locks%") >= 1
	})
	released = true
	if err := hold.Rollback().Error; err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the payment did not finish")
	}
	waitFor(t, "OrderCancelled handled", func() bool { return s.consumedOK(t) > handled })

	id := biz.PaymentID(key)
	if p := s.payment(t, id); p == nil || p.Status != biz.StatusRefunded {
		t.Fatalf("payment of the cancelled order after the cancellation was handled: %+v, want REFUNDED", p)
	}
	if got := balance(t, s, user); got != before {
		t.Fatalf("%s balance %d, want %d (refunded)", user, got, before)
	}
	waitFor(t, "PaymentRefunded", func() bool { return s.events.n(eventv1.TagPaymentRefunded, order) == 1 })
	var refunds int64
	s.d.Gorm().Raw("SELECT COUNT(*) FROM gateway_ledger WHERE payment_id = ? AND kind = 'refund'", id).Scan(&refunds)
	if refunds != 1 {
		t.Fatalf("%d gateway refunds, want 1", refunds)
	}
}
