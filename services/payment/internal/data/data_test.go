package data

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/services/payment/internal/biz"
	"github.com/tidemq/tide/services/payment/internal/conf"
)

func newTestData(t *testing.T) *Data {
	t.Helper()
	db := testenv.MariaDB(t)
	d, cleanup, err := NewData(&conf.Data{Database: &conf.Data_Database{Source: db.DSN, Migrate: true},
		Redis: &conf.Data_Redis{Addr: testenv.Redis(t).Addr()}}, slog.Default())
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

// The payment row, the idempotency record and the debit commit together
// or not at all; the gateway's ledger is outside the transaction.
func TestDataPaymentTransactionAtomic(t *testing.T) {
	d := newTestData(t)
	ctx := context.Background()
	payments, keys, accounts := NewPaymentRepo(d), NewIdempotencyRepo(d), NewAccountRepo(d)
	gw := NewGateway(d, &conf.Fault{GatewayTimeoutAfterCapture: true}, slog.Default())
	now := time.Now().UTC()
	p := &biz.Payment{ID: biz.PaymentID("k1"), OrderID: "o1", UserID: "u-alice", Amount: 100, Status: biz.StatusSucceeded,
		IdempotencyKey: "k1", CreatedAt: now, UpdatedAt: now}
	err := d.InTx(ctx, func(ctx context.Context) error {
		if err := keys.Create(ctx, &biz.IdempotencyRecord{Key: "k1", Fingerprint: "fp", Response: []byte("{}"), CreatedAt: now}); err != nil {
			return err
		}
		if err := payments.Create(ctx, p); err != nil {
			return err
		}
		if err := accounts.Debit(ctx, p.UserID, p.Amount); err != nil {
			return err
		}
		return gw.Capture(ctx, p)
	})
	if !errors.Is(err, biz.ErrGatewayTimeout) {
		t.Fatalf("err = %v", err)
	}
	if rec, _ := keys.Get(ctx, "k1"); rec != nil {
		t.Fatal("idempotency record survived the rollback")
	}
	if _, err := payments.Get(ctx, p.ID); !errors.Is(err, biz.ErrPaymentNotFound) {
		t.Fatalf("payment survived the rollback: %v", err)
	}
	if b, _ := accounts.Balance(ctx, "u-alice"); b != 1000000 {
		t.Fatalf("balance %d after rollback", b)
	}
	lines, err := gw.Statement(ctx, 0, 10)
	if err != nil || len(lines) != 1 || lines[0].Kind != "capture" {
		t.Fatalf("gateway statement = %+v, %v (the capture must survive: captured but unknown to us)", lines, err)
	}

	// Committed: a second record for the key and a second payment for the
	// order are refused.
	err = d.InTx(ctx, func(ctx context.Context) error {
		if err := keys.Create(ctx, &biz.IdempotencyRecord{Key: "k1", Fingerprint: "fp", Response: []byte("{}"), CreatedAt: now}); err != nil {
			return err
		}
		return payments.Create(ctx, p)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Create(ctx, &biz.IdempotencyRecord{Key: "k1", Fingerprint: "fp", Response: []byte("{}"), CreatedAt: now}); !errors.Is(err, biz.ErrIdempotencyInProgress) {
		t.Fatalf("duplicate key: %v", err)
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
}
