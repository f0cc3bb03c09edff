package data

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tidemq/tide/pkg/testenv"
	kitconf "github.com/tidemq/tide/services/kit/conf"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/fault"
)

func newTestData(t *testing.T) *Data {
	t.Helper()
	db := testenv.MariaDB(t)
	d, cleanup, err := NewData(&kitconf.Data{Database: &kitconf.Data_Database{Source: db.DSN, Migrate: proto.Bool(true)},
		Redis: &kitconf.Data_Redis{Addr: testenv.Redis(t).Addr()}}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return d
}

func TestDataAccountsSeededAndMoved(t *testing.T) {
	d := newTestData(t)
	ctx := context.Background()
	a := NewAccountRepo(d)
	tests := []struct {
		name    string
		user    string
		amount  int64
		wantErr error
		want    int64
	}{
		{"debit", "u-dave", 400, nil, 600},
		{"debit to zero", "u-dave", 600, nil, 0},
		{"overdraft refused", "u-dave", 1, biz.ErrInsufficientBalance, 0},
		{"unknown account", "u-nobody", 1, biz.ErrAccountNotFound, 0},
	}
	for _, tt := range tests {
		err := a.Debit(ctx, tt.user, tt.amount)
		if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
			t.Fatalf("%s: err %v, want %v", tt.name, err, tt.wantErr)
		}
		if tt.wantErr == nil {
			if b, _ := a.Balance(ctx, tt.user); b != tt.want {
				t.Fatalf("%s: balance %d, want %d", tt.name, b, tt.want)
			}
		}
	}
}

// The payment row and the debit commit together or not at all; the
// gateway's ledger is outside the transaction.
func TestDataPaymentTransactionAtomic(t *testing.T) {
	d := newTestData(t)
	ctx := context.Background()
	payments, accounts := NewPaymentRepo(d), NewAccountRepo(d)
	faults := fault.New(map[string]fault.Spec{fault.GatewayTimeoutAfterCapture: {Enabled: true, Count: 1}}, nil, nil)
	gw := NewGateway(d, faults, slog.Default())
	now := time.Now().UTC()
	p := &biz.Payment{ID: biz.PaymentID("k1"), OrderID: "o1", UserID: "u-alice", Amount: 100, Status: biz.StatusSucceeded,
		IdempotencyKey: "k1", CreatedAt: now, UpdatedAt: now}
	pay := func(ctx context.Context) error {
		if err := payments.Create(ctx, p); err != nil {
			return err
		}
		if err := accounts.Debit(ctx, p.UserID, p.Amount); err != nil {
			return err
		}
		return gw.Capture(ctx, p)
	}
	if err := d.InTx(ctx, pay); !errors.Is(err, biz.ErrGatewayTimeout) {
		t.Fatalf("err = %v", err)
	}
	if _, err := payments.Get(ctx, p.ID); !errors.Is(err, biz.ErrPaymentNotFound) {
		t.Fatalf("payment survived the rollback: %v", err)
	}
	if b, _ := accounts.Balance(ctx, "u-alice"); b != 1000000 {
		t.Fatalf("balance %d after rollback", b)
	}
	lines, err := gw.Statement(ctx, 0, 10)
	if err != nil || len(lines) != 1 || lines[0].Kind != biz.LineCapture {
		t.Fatalf("gateway statement = %+v, %v (the capture must survive: captured but unknown to us)", lines, err)
	}

	// Committed (the fault fired once): the same payment again is
	// ErrPaymentExists, another payment for the order ErrOrderAlreadyPaid.
	if err := d.InTx(ctx, pay); err != nil {
		t.Fatal(err)
	}
	if err := payments.Create(ctx, p); !errors.Is(err, biz.ErrPaymentExists) {
		t.Fatalf("same payment: %v", err)
	}
	q := *p
	q.ID, q.IdempotencyKey = biz.PaymentID("k2"), "k2"
	if err := payments.Create(ctx, &q); !errors.Is(err, biz.ErrOrderAlreadyPaid) {
		t.Fatalf("second payment for the order: %v", err)
	}
	if ok, err := payments.SetStatus(ctx, p.ID, biz.StatusSucceeded, biz.StatusRefunded, "x"); !ok || err != nil {
		t.Fatalf("refund: %v %v", ok, err)
	}
	if ok, _ := payments.SetStatus(ctx, p.ID, biz.StatusSucceeded, biz.StatusRefunded, "x"); ok {
		t.Fatal("refunded twice")
	}
	for range 2 {
		if err := payments.MarkOrderCancelled(ctx, "o9", "timeout"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := payments.OrderCancelled(ctx, "o9"); !ok || err != nil {
		t.Fatalf("OrderCancelled = %v %v", ok, err)
	}
	// Ledger and statement views used by reconciliation.
	ps, err := NewLedger(d).PaymentsAfter(ctx, "", 10)
	if err != nil || len(ps) != 1 || ps[0].ID != p.ID {
		t.Fatalf("PaymentsAfter = %v, %v", ps, err)
	}
	caps, err := gw.CapturesAfter(ctx, 0, 10)
	if err != nil || len(caps) != 1 {
		t.Fatalf("CapturesAfter = %v, %v", caps, err)
	}
	for range 2 { // idempotent per reference
		if err := gw.RefundCapture(ctx, &caps[0]); err != nil {
			t.Fatal(err)
		}
	}
	if ls, _ := gw.LinesFor(ctx, []string{p.ID}); len(ls) != 2 || ls[1].Ref != biz.CaptureRefundRef(caps[0].Ref) {
		t.Fatalf("lines = %+v", ls)
	}
}

// The API idempotency store replays the stored response, rejects another
// body under the same key and stores nothing when fn fails.
func TestDataIdempotencyStore(t *testing.T) {
	d := newTestData(t)
	ctx := context.Background()
	s, err := NewIdempotencyStore(d, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	fn := func(resp string, fail error) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { runs++; return []byte(resp), fail }
	}
	if _, _, err := s.Do(ctx, "a", []byte("fp1"), fn("", errors.New("transient"))); err == nil {
		t.Fatal("fn error not returned")
	}
	tests := []struct {
		name         string
		fp, resp     string
		wantResp     string
		wantReplayed bool
		wantErr      error
	}{
		{"first", "fp1", "r1", "r1", false, nil},
		{"repeat", "fp1", "r2", "r1", true, nil},
		{"other body", "fp2", "r3", "", false, biz.ErrIdempotencyKeyReused},
	}
	for _, tt := range tests {
		resp, replayed, err := s.Do(ctx, "a", []byte(tt.fp), fn(tt.resp, nil))
		if !errors.Is(err, tt.wantErr) || (err == nil && tt.wantErr != nil) || string(resp) != tt.wantResp || replayed != tt.wantReplayed {
			t.Fatalf("%s: %q %v %v", tt.name, resp, replayed, err)
		}
	}
	if runs != 2 {
		t.Fatalf("fn ran %d times, want 2 (the failed one and the first)", runs)
	}
}

// running counts the statements of d's database other sessions are
// running whose text matches like (a SQL LIKE pattern). A statement
// that can only wait for a lock the test holds is seen there until the
// lock is released. (information_schema.INNODB_TRX of MariaDB 10.11 does
// not list every waiting transaction reliably.)
func running(t *testing.T, d *Data, like string) int64 {
	t.Helper()
	var n int64
	err := d.Gorm().Raw(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
		WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE ?`, like).Scan(&n).Error
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// LockOrder serializes transactions per order, on a new row and on an
// existing one, and refuses to run outside a transaction.
func TestDataLockOrder(t *testing.T) {
	d := newTestData(t)
	payments := NewPaymentRepo(d)
	ctx := context.Background()
	if err := payments.LockOrder(ctx, "o1"); !errors.Is(err, ErrNoTransaction) {
		t.Fatalf("LockOrder outside a transaction: %v", err)
	}
	for _, name := range []string{"new row", "existing row"} {
		t.Run(name, func(t *testing.T) {
			held, release := make(chan struct{}), make(chan struct{})
			first := make(chan error, 1)
			go func() {
				first <- d.InTx(ctx, func(ctx context.Context) error {
					err := payments.LockOrder(ctx, "o1")
					close(held)
					<-release
					return err
				})
			}()
			released := false
			defer func() {
				if !released {
					close(release)
				}
			}()
			<-held
			// Another order is not blocked.
			if err := d.InTx(ctx, func(ctx context.Context) error { return payments.LockOrder(ctx, "o2") }); err != nil {
				t.Fatal(err)
			}
			second := make(chan error, 1)
			go func() {
				second <- d.InTx(ctx, func(ctx context.Context) error { return payments.LockOrder(ctx, "o1") })
			}()
			deadline := time.Now().Add(30 * time.Second)
			for running(t, d, "INSERT INTO order_locks%") != 1 {
				if time.Now().After(deadline) {
					t.Fatal("the second LockOrder never ran")
				}
				time.Sleep(20 * time.Millisecond)
			}
			select {
			case err := <-second:
				t.Fatalf("second LockOrder returned (%v) while the first holds the lock", err)
			default:
			}
			released = true
			close(release)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
			if err := <-second; err != nil {
				t.Fatal(err)
			}
		})
	}
}
