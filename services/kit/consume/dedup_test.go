package consume

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/idempotent"
	"github.com/tidemq/tide/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

type txKey struct{}

func withTx(ctx context.Context, tx *gorm.DB) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

// TestTxDedup: the handler's effect, written through the transaction it
// finds in its ctx, commits with the dedup record: a second delivery of
// the key is acknowledged without a second effect, a failed effect leaves
// neither (its retry applies it), and an Effect wrapper runs inside the
// same transaction. Without a DB the handler sees its ctx unchanged and
// Redis alone deduplicates.
func TestTxDedup(t *testing.T) {
	db, err := gorm.Open(mysql.Open(testenv.MariaDB(t).DSN), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := idempotent.Migrate(ctx, db, ""); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE effects (k VARCHAR(64) NOT NULL, via VARCHAR(16) NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: testenv.Redis(t).Addr()})
	t.Cleanup(func() { rdb.Close() })

	fail := true
	effect := func(ctx context.Context, m *mqclient.MessageExt) error {
		tx, ok := ctx.Value(txKey{}).(*gorm.DB)
		if !ok {
			return errors.New("no transaction in ctx")
		}
		if err := tx.Exec("INSERT INTO effects (k, via) VALUES (?, 'handler')", m.Key()).Error; err != nil {
			return err
		}
		if m.Key() == "k-fail" && fail {
			return errors.New("effect failed")
		}
		return nil
	}
	wrapped := 0
	d := TxDedup{DB: db, Redis: rdb, WithTx: withTx, Effect: func(next idempotent.Effect) idempotent.Effect {
		return func(ctx context.Context, tx *gorm.DB, m *mqclient.MessageExt) error {
			wrapped++
			if err := tx.Exec("INSERT INTO effects (k, via) VALUES (?, 'wrapper')", m.Key()).Error; err != nil {
				return err
			}
			return next(ctx, tx, m)
		}
	}}
	h, err := d.Wrap(idempotent.Options{Group: "g", Handler: "h"}, effect)
	if err != nil {
		t.Fatal(err)
	}
	msg := func(key string) *mqclient.MessageExt {
		return &mqclient.MessageExt{Message: mqclient.Message{Topic: "t", Body: []byte("body-" + key), Keys: []string{key}}}
	}
	count := func(key string) (n int64) {
		if err := db.Raw("SELECT COUNT(*) FROM effects WHERE k = ?", key).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 2 {
		if err := h(ctx, msg("k-1")); err != nil {
			t.Fatalf("delivery %d: %v", i, err)
		}
	}
	if n := count("k-1"); n != 2 || wrapped != 1 {
		t.Fatalf("k-1 delivered twice: %d effect rows (want 2: wrapper and handler), wrapper ran %d times (want 1)", n, wrapped)
	}
	if err := h(ctx, msg("k-fail")); err == nil {
		t.Fatal("failed effect acknowledged")
	}
	if n := count("k-fail"); n != 0 {
		t.Fatalf("failed effect left %d rows", n)
	}
	fail = false
	if err := h(ctx, msg("k-fail")); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n := count("k-fail"); n != 2 {
		t.Fatalf("retry wrote %d rows, want 2", n)
	}

	calls := 0
	ro, err := TxDedup{Redis: rdb}.Wrap(idempotent.Options{Group: "g", Handler: "redis-only", RedisPolicy: idempotent.FailOpen}, func(ctx context.Context, _ *mqclient.MessageExt) error {
		if ctx.Value(txKey{}) != nil {
			t.Error("Redis-only handler got a transaction")
		}
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := ro(ctx, msg("k-2")); err != nil {
			t.Fatal(err)
		}
	}
	if calls != 1 {
		t.Fatalf("Redis-only: handler ran %d times, want 1", calls)
	}
}
