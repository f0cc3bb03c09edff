package e2e

import (
	"testing"
	"time"
)

// 1b. The books balance (issue 18): prices come from the inventory
// catalog, and a payment must be of the order's total, by the order's
// user, for an order that exists and is not paid yet. Each refusal is a
// 4xx with its reason and debits and captures nothing (checked here, and
// by the invariants after the scenario: balances, captures, payments).
func TestMoneyRulesRefuseWhatDoesNotBalance(t *testing.T) {
	s, ctx := begin(t, 2*time.Minute)

	// The client cannot set the price, nor order what the catalog lacks.
	if _, err := s.createOrder(ctx, "u-alice", item{ProductID: "p-apple", Quantity: 3, UnitPrice: 1}); statusOf(err) != 400 || reasonOf(err) != "PRICE_MISMATCH" {
		t.Fatalf("order priced by the client: %v; want 400 PRICE_MISMATCH", err)
	}
	if _, err := s.createOrder(ctx, "u-alice", item{ProductID: "p-does-not-exist", Quantity: 1}); statusOf(err) != 404 || reasonOf(err) != "PRODUCT_NOT_FOUND" {
		t.Fatalf("order of an unknown product: %v; want 404 PRODUCT_NOT_FOUND", err)
	}

	o := placeReserved(t, ctx, s, "u-alice", apple(3))
	if o.TotalAmount != 360 {
		t.Fatalf("total %d, want 360 (3 x the catalog's 120)", o.TotalAmount)
	}
	pdb, err := s.db(ctx, "tide_payment")
	if err != nil {
		t.Fatal(err)
	}
	balance := func(user string) int64 {
		var b int64
		if err := pdb.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE user_id = ?", user).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	alice, bob := balance("u-alice"), balance("u-bob")
	refused := []struct {
		name, order, user string
		amount            int64
		status            int
		reason            string
	}{
		{"underpaid", o.ID, "u-alice", 100, 400, "AMOUNT_MISMATCH"},
		{"overpaid", o.ID, "u-alice", 361, 400, "AMOUNT_MISMATCH"},
		{"order does not exist", "does-not-exist", "u-alice", 360, 404, "ORDER_NOT_FOUND"},
		{"another user's order", o.ID, "u-bob", 360, 403, "ORDER_NOT_OWNED"},
	}
	for _, r := range refused {
		if _, err := s.payRetrying(ctx, idemKey("money"), r.order, r.user, r.amount); statusOf(err) != r.status || reasonOf(err) != r.reason {
			t.Fatalf("%s: %v; want %d %s", r.name, err, r.status, r.reason)
		}
	}
	var lines int
	if err := pdb.QueryRowContext(ctx, "SELECT COUNT(*) FROM gateway_ledger WHERE order_id IN (?, 'does-not-exist')", o.ID).Scan(&lines); err != nil {
		t.Fatal(err)
	}
	if a, b := balance("u-alice"), balance("u-bob"); a != alice || b != bob || lines != 0 {
		t.Fatalf("refused payments moved money: alice %d -> %d, bob %d -> %d, %d gateway lines", alice, a, bob, b, lines)
	}

	// The exact total by the order's user pays; a second payment is refused.
	p, err := s.payRetrying(ctx, idemKey("money-ok"), o.ID, "u-alice", 360)
	if err != nil || p.Status != "SUCCEEDED" {
		t.Fatalf("payment of the total: %+v, %v", p, err)
	}
	if _, err := s.waitOrder(ctx, o.ID, "PAID"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.payRetrying(ctx, idemKey("money-again"), o.ID, "u-alice", 360); statusOf(err) != 409 || reasonOf(err) != "ORDER_ALREADY_PAID" {
		t.Fatalf("second payment: %v; want 409 ORDER_ALREADY_PAID", err)
	}
	if got := alice - balance("u-alice"); got != 360 {
		t.Fatalf("u-alice debited %d, want 360 once", got)
	}
}
