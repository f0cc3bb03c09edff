package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/tidemq/tide/pkg/mqclient"
)

// The invariants every scenario ends with, read from all three databases
// and the broker once the system is quiescent:
//
//   - money is conserved: every account's balance is its initial balance
//     minus its SUCCEEDED payments, and the gateway's net capture for each
//     payment is its amount when SUCCEEDED and 0 when REFUNDED;
//   - stock is conserved: available+reserved+sold of every product equals
//     its initial stock, nothing stays reserved, and sold equals the units
//     of the PAID orders (each sale applied once);
//   - every order ends PAID with a SUCCEEDED payment of its total and a SOLD
//     reservation of its items, or CANCELLED with its stock released (or
//     never reserved) and no payment or a REFUNDED one;
//   - no effect is applied twice: at most one capture and one refund per
//     payment, no payment without an order, one reservation per order,
//     per-order events applied in sequence order (a stale event may be
//     recorded late but must not change the status), never both OrderPaid
//     and OrderCancelled;
//   - the broker delivered everything: the services' consumer groups have
//     no lag and their dead-letter queues are empty.

// initial is the state before the first scenario.
type initial struct {
	stock    map[string]int64 // product -> available+reserved+sold
	balances map[string]int64 // user -> balance
}

// db opens (once) a connection pool to database name through the mapped
// MariaDB port.
func (s *stack) db(ctx context.Context, name string) (*sql.DB, error) {
	dbMu.Lock()
	defer dbMu.Unlock()
	if d, ok := dbs[name]; ok {
		return d, nil
	}
	ep, err := s.endpoint(ctx, "mariadb", mariadbPort)
	if err != nil {
		return nil, err
	}
	d, err := sql.Open("mysql", "root:tide-root@tcp("+ep+")/"+name+"?parseTime=true&loc=UTC&timeout=5s")
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(4)
	dbs[name] = d
	return d, nil
}

var (
	dbMu    sync.Mutex
	dbs     = map[string]*sql.DB{}
	initMu  sync.Mutex
	initVal *initial
)

func (s *stack) snapshotInitial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inv, err := s.db(ctx, "tide_inventory")
	if err != nil {
		return err
	}
	pay, err := s.db(ctx, "tide_payment")
	if err != nil {
		return err
	}
	in := &initial{stock: map[string]int64{}, balances: map[string]int64{}}
	if err := queryMap(ctx, inv, "SELECT id, available+reserved+sold FROM products", in.stock); err != nil {
		return err
	}
	if err := queryMap(ctx, pay, "SELECT user_id, balance FROM accounts", in.balances); err != nil {
		return err
	}
	if len(in.stock) == 0 || len(in.balances) == 0 {
		return fmt.Errorf("no seed data: %d products, %d accounts", len(in.stock), len(in.balances))
	}
	initMu.Lock()
	initVal = in
	initMu.Unlock()
	return nil
}

func queryMap(ctx context.Context, db *sql.DB, q string, into map[string]int64) error {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		into[k] = v
	}
	return rows.Err()
}

// checkInvariants waits (up to within) for the system to become quiescent
// and consistent, then reports every violation that remains.
func checkInvariants(t *testing.T, s *stack, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within+30*time.Second)
	defer cancel()
	deadline := time.Now().Add(within)
	var v []string
	for {
		var err error
		v, err = s.violations(ctx)
		if err != nil {
			v = []string{"check failed: " + err.Error()}
		}
		if len(v) == 0 {
			t.Logf("invariants hold")
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	sort.Strings(v)
	if len(v) > 40 {
		v = append(v[:40], fmt.Sprintf("... and %d more", len(v)-40))
	}
	t.Errorf("invariants violated after %s:\n  %s", within, strings.Join(v, "\n  "))
}

type dbOrder struct {
	id, user, status string
	total            int64
	items            map[string]int64 // product -> quantity
}

type dbPayment struct {
	id, order, user, status string
	amount                  int64
}

type dbReservation struct {
	status string
	items  map[string]int64
}

// violations reads everything once and returns what is wrong.
func (s *stack) violations(ctx context.Context) ([]string, error) {
	initMu.Lock()
	in := initVal
	initMu.Unlock()
	odb, err := s.db(ctx, "tide_order")
	if err != nil {
		return nil, err
	}
	pdb, err := s.db(ctx, "tide_payment")
	if err != nil {
		return nil, err
	}
	idb, err := s.db(ctx, "tide_inventory")
	if err != nil {
		return nil, err
	}
	var v []string
	bad := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }

	// orders
	orders := map[string]*dbOrder{}
	rows, err := odb.QueryContext(ctx, "SELECT id, user_id, status, total, items FROM orders")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var o dbOrder
		var items string
		if err := rows.Scan(&o.id, &o.user, &o.status, &o.total, &items); err != nil {
			rows.Close()
			return nil, err
		}
		o.items, err = parseItems(items)
		if err != nil {
			bad("order %s: items %q: %v", o.id, items, err)
		}
		orders[o.id] = &o
	}
	rows.Close()

	// payments
	payments := map[string]*dbPayment{} // by order
	rows, err = pdb.QueryContext(ctx, "SELECT id, order_id, user_id, status, amount FROM payments")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var p dbPayment
		if err := rows.Scan(&p.id, &p.order, &p.user, &p.status, &p.amount); err != nil {
			rows.Close()
			return nil, err
		}
		payments[p.order] = &p
	}
	rows.Close()

	// gateway: net capture per payment, counts of each kind
	type gw struct{ captures, refunds, net int64 }
	gateway := map[string]*gw{}
	rows, err = pdb.QueryContext(ctx, "SELECT payment_id, kind, amount FROM gateway_ledger")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var pid, kind string
		var amount int64
		if err := rows.Scan(&pid, &kind, &amount); err != nil {
			rows.Close()
			return nil, err
		}
		g := gateway[pid]
		if g == nil {
			g = &gw{}
			gateway[pid] = g
		}
		switch kind {
		case "capture":
			g.captures++
			g.net += amount
		case "refund":
			g.refunds++
			g.net -= amount
		}
	}
	rows.Close()

	// reservations
	reservations := map[string]*dbReservation{}
	rows, err = idb.QueryContext(ctx, "SELECT order_id, status FROM reservations")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		r := &dbReservation{items: map[string]int64{}}
		if err := rows.Scan(&id, &r.status); err != nil {
			rows.Close()
			return nil, err
		}
		reservations[id] = r
	}
	rows.Close()
	rows, err = idb.QueryContext(ctx, "SELECT order_id, product_id, quantity FROM reservation_items")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, pid string
		var q int64
		if err := rows.Scan(&id, &pid, &q); err != nil {
			rows.Close()
			return nil, err
		}
		if r := reservations[id]; r != nil {
			r.items[pid] += q
		} else {
			bad("reservation items of %s without a reservation", id)
		}
	}
	rows.Close()

	// every order ends in one of the allowed outcomes
	soldByOrders := map[string]int64{}
	for _, o := range orders {
		p := payments[o.id]
		r := reservations[o.id]
		switch o.status {
		case "PAID":
			if p == nil || p.status != "SUCCEEDED" {
				bad("order %s PAID but payment %s", o.id, describePayment(p))
			} else if p.amount != o.total || p.user != o.user {
				bad("order %s PAID (total %d, user %s) by payment of %d from %s", o.id, o.total, o.user, p.amount, p.user)
			}
			if r == nil || r.status != "SOLD" {
				bad("order %s PAID but reservation %s", o.id, describeReservation(r))
			} else if !sameItems(r.items, o.items) {
				bad("order %s PAID: reserved items %v differ from order items %v", o.id, r.items, o.items)
			}
			for pid, q := range o.items {
				soldByOrders[pid] += q
			}
		case "CANCELLED":
			if p != nil && p.status != "REFUNDED" {
				bad("order %s CANCELLED but payment %s", o.id, describePayment(p))
			}
			if r == nil || (r.status != "RELEASED" && r.status != "CANCELLED" && r.status != "REJECTED") {
				bad("order %s CANCELLED but reservation %s", o.id, describeReservation(r))
			}
		default:
			bad("order %s not finished: %s (payment %s, reservation %s)", o.id, o.status, describePayment(p), describeReservation(r))
		}
	}
	for oid, p := range payments {
		if orders[oid] == nil {
			bad("payment %s for unknown order %s", p.id, oid)
		}
		g := gateway[p.id]
		if g == nil {
			g = &gw{}
		}
		want := int64(0)
		if p.status == "SUCCEEDED" {
			want = p.amount
		}
		if g.net != want || g.captures > 1 || g.refunds > 1 {
			bad("payment %s %s %d: gateway has %d captures, %d refunds, net %d", p.id, p.status, p.amount, g.captures, g.refunds, g.net)
		}
	}
	// a capture the payment service does not know of (the gateway captured,
	// then our transaction rolled back) must have been refunded
	known := map[string]bool{}
	for _, p := range payments {
		known[p.id] = true
	}
	for pid, g := range gateway {
		if !known[pid] && g.net != 0 {
			bad("gateway holds %d net for payment %s that the payment service does not have (%d captures, %d refunds)", g.net, pid, g.captures, g.refunds)
		}
	}
	for oid, r := range reservations {
		if orders[oid] == nil && r.status != "CANCELLED" && r.status != "REJECTED" {
			bad("reservation %s %s for unknown order", oid, r.status)
		}
	}

	// money
	if in != nil {
		balances := map[string]int64{}
		if err := queryMap(ctx, pdb, "SELECT user_id, balance FROM accounts", balances); err != nil {
			return nil, err
		}
		spent := map[string]int64{}
		for _, p := range payments {
			if p.status == "SUCCEEDED" {
				spent[p.user] += p.amount
			}
		}
		for u, b0 := range in.balances {
			if got, want := balances[u], b0-spent[u]; got != want {
				bad("account %s: balance %d, want %d (initial %d - succeeded payments %d)", u, got, want, b0, spent[u])
			}
		}
	}

	// stock
	if in != nil {
		type prod struct{ available, reserved, sold int64 }
		products := map[string]prod{}
		rows, err = idb.QueryContext(ctx, "SELECT id, available, reserved, sold FROM products")
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var p prod
			if err := rows.Scan(&id, &p.available, &p.reserved, &p.sold); err != nil {
				rows.Close()
				return nil, err
			}
			products[id] = p
		}
		rows.Close()
		for id, total := range in.stock {
			p := products[id]
			if got := p.available + p.reserved + p.sold; got != total {
				bad("product %s: available %d + reserved %d + sold %d = %d, want %d", id, p.available, p.reserved, p.sold, got, total)
			}
			if p.reserved != 0 {
				bad("product %s: %d units still reserved", id, p.reserved)
			}
			if p.sold != soldByOrders[id] {
				bad("product %s: sold %d, PAID orders hold %d", id, p.sold, soldByOrders[id])
			}
		}
	}

	// per-order sequence: the order service applied each topic's events of
	// an order in seq order, and never both outcomes. A stale event may be
	// recorded after a later one (a transactional message becomes visible
	// when it commits, possibly after the check-back), but it must not
	// change the order's status.
	rows, err = odb.QueryContext(ctx, "SELECT order_id, topic, seq, event, status FROM order_timeline ORDER BY id")
	if err != nil {
		return nil, err
	}
	lastSeq := map[string]int64{}
	lastStatus := map[string]string{}
	events := map[string]map[string]int{}
	for rows.Next() {
		var oid, topic, event, status string
		var seq int64
		if err := rows.Scan(&oid, &topic, &seq, &event, &status); err != nil {
			rows.Close()
			return nil, err
		}
		k := oid + " " + topic
		if seq <= lastSeq[k] && status != lastStatus[oid] {
			bad("order %s: %s seq %d (%s) applied after seq %d, changing the status %s -> %s", oid, topic, seq, event, lastSeq[k], lastStatus[oid], status)
		}
		lastSeq[k] = max(lastSeq[k], seq)
		lastStatus[oid] = status
		if events[oid] == nil {
			events[oid] = map[string]int{}
		}
		events[oid][event]++
	}
	rows.Close()
	for oid, ev := range events {
		if ev["OrderPaid"] > 0 && ev["OrderCancelled"] > 0 {
			bad("order %s has both OrderPaid and OrderCancelled", oid)
		}
		// the order's own events happen once per order; others may recur
		// with new sequence numbers (a reconciliation repair emits a new
		// StockReleased), and a repeated seq cannot be stored at all
		for _, e := range []string{"OrderCreated", "OrderPaid", "OrderCancelled"} {
			if n := ev[e]; n > 1 {
				bad("order %s: %s recorded %d times", oid, e, n)
			}
		}
	}

	// broker
	if len(v) == 0 {
		v = append(v, s.brokerViolations(ctx)...)
	}
	return v, nil
}

func parseItems(s string) (map[string]int64, error) {
	var items []map[string]any
	if err := json.Unmarshal([]byte(s), &items); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, it := range items {
		var pid string
		var q float64
		for k, v := range it {
			switch strings.ToLower(strings.ReplaceAll(k, "_", "")) {
			case "productid":
				pid, _ = v.(string)
			case "quantity":
				switch x := v.(type) {
				case float64:
					q = x
				case string:
					fmt.Sscan(x, &q)
				}
			}
		}
		out[pid] += int64(q)
	}
	return out, nil
}

func sameItems(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func describePayment(p *dbPayment) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s %d", p.id, p.status, p.amount)
}

func describeReservation(r *dbReservation) string {
	if r == nil {
		return "none"
	}
	return r.status
}

// consumed lists the consumer groups of the services and the topics they
// read (services/*/README.md). A group the broker does not know is
// skipped: the services may rename groups.
var consumed = map[string][]string{
	"order-service":     {"inventory-events", "payment-events"},
	"order-timer":       {"order-cancel-timer"},
	"inventory-service": {"order-events"},
	"payment-service":   {"order-events"},
}

var (
	adminOnce sync.Once
	admin     *mqclient.Admin
	adminErr  error
)

func (s *stack) admin(ctx context.Context) (*mqclient.Admin, error) {
	adminOnce.Do(func() {
		var a1, a2 string
		if a1, adminErr = s.endpoint(ctx, "namesrv1", namesrvPort); adminErr != nil {
			return
		}
		if a2, adminErr = s.endpoint(ctx, "namesrv2", namesrvPort); adminErr != nil {
			return
		}
		admin, adminErr = mqclient.NewAdmin(mqclient.WithNameServers(a1, a2), mqclient.WithRequestTimeout(3*time.Second))
		if adminErr == nil {
			adminErr = admin.Start(ctx)
		}
	})
	return admin, adminErr
}

// brokerViolations: consumer lag and dead letters of the services' groups.
func (s *stack) brokerViolations(ctx context.Context) []string {
	a, err := s.admin(ctx)
	if err != nil {
		return []string{"admin client: " + err.Error()}
	}
	var v []string
	for group, topics := range consumed {
		for _, topic := range topics {
			qs, err := a.ConsumerProgress(ctx, group, topic)
			if err != nil {
				continue // topic or route unknown: nothing to check
			}
			var lag int64
			known := false
			for _, q := range qs {
				if q.ConsumerOffset >= 0 {
					known = true
				}
				lag += q.Lag
			}
			if known && lag > 0 {
				v = append(v, fmt.Sprintf("broker: group %s lags %d messages on %s", group, lag, topic))
			}
		}
		if qs, err := a.ConsumerProgress(ctx, group, "%DLQ%"+group); err == nil {
			var n int64
			for _, q := range qs {
				n += q.BrokerOffset
			}
			if n > 0 {
				v = append(v, fmt.Sprintf("broker: %d messages in %%DLQ%%%s", n, group))
			}
		}
	}
	return v
}
