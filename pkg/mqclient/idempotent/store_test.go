package idempotent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tidemq/tide/pkg/tidetest"
	"gorm.io/gorm"
)

func TestStoreDo(t *testing.T) {
	f := newFixture(t)
	s, err := NewStore(f.db, StoreOptions{Scope: "payment-api", Operation: "create-payment", Registerer: f.reg, Logger: tidetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	create := func(amount string) func(tx *gorm.DB) ([]byte, error) {
		return func(tx *gorm.DB) ([]byte, error) {
			n := runs.Add(1)
			if err := tx.Exec("UPDATE accounts SET balance = balance - 10 WHERE id = 1").Error; err != nil {
				return nil, err
			}
			if err := tx.Exec("UPDATE accounts SET balance = balance + 10 WHERE id = 2").Error; err != nil {
				return nil, err
			}
			if err := tx.Exec("INSERT INTO effects VALUES (?, 1) ON DUPLICATE KEY UPDATE n = n + 1", "pay-"+amount).Error; err != nil {
				return nil, err
			}
			return []byte(fmt.Sprintf(`{"payment":%d,"amount":%s}`, n, amount)), nil
		}
	}
	ctx := context.Background()
	fp := Fingerprint([]byte("POST /payments"), []byte(`{"amount":10}`))

	first, replayed, err := s.Do(ctx, "idem-1", fp, create("10"))
	if err != nil || replayed {
		t.Fatalf("first: %s %v %v", first, replayed, err)
	}
	again, replayed, err := s.Do(ctx, "idem-1", fp, create("10"))
	if err != nil || !replayed || string(again) != string(first) {
		t.Fatalf("retry: got %s replayed=%v err=%v, want %s replayed", again, replayed, err, first)
	}
	if _, _, err := s.Do(ctx, "idem-1", Fingerprint([]byte("POST /payments"), []byte(`{"amount":99}`)), create("99")); !errors.Is(err, ErrPayloadMismatch) {
		t.Fatalf("different request: got %v, want ErrPayloadMismatch", err)
	}

	// A failed attempt stores nothing: the key stays usable.
	if _, _, err := s.Do(ctx, "idem-2", fp, func(tx *gorm.DB) ([]byte, error) {
		tx.Exec("UPDATE accounts SET balance = balance - 10 WHERE id = 1")
		return nil, errors.New("card declined by network timeout")
	}); err == nil {
		t.Fatal("want fn's error")
	}
	fp2 := Fingerprint([]byte("POST /payments"), []byte(`{"amount":20}`))
	// Concurrent retries of one key: fn runs once, every caller gets the
	// same response (or ErrTransient, to retry).
	var wg sync.WaitGroup
	resps := make([]string, 8)
	for i := range resps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, _, err := s.Do(ctx, "idem-2", fp2, create("20"))
				if errors.Is(err, ErrTransient) {
					continue
				}
				if err != nil {
					t.Error(err)
				}
				resps[i] = string(r)
				return
			}
		}()
	}
	wg.Wait()
	for _, r := range resps {
		if r != resps[0] {
			t.Errorf("responses differ: %q vs %q", r, resps[0])
		}
	}
	if runs.Load() != 2 {
		t.Errorf("fn ran %d times, want 2", runs.Load())
	}
	f.checkInvariant(t, []string{"pay-10", "pay-20"})
}
