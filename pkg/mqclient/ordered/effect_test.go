package ordered_test

import (
	"context"
	"errors"
	"testing"

	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestEffectJoinsCallerTransaction: Guard.Effect runs the version check,
// its advance and apply inside the caller's transaction, so the caller's
// rollback undoes all of them and its commit keeps them together.
func TestEffectJoinsCallerTransaction(t *testing.T) {
	db := openDB(t, testenv.MariaDB(t).DSN)
	ctx := context.Background()
	if err := ordered.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE applied (id BIGINT AUTO_INCREMENT PRIMARY KEY, biz_key VARCHAR(64) NOT NULL, version BIGINT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	g, err := ordered.New(db, "effect", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	eff := g.Effect(func(_ context.Context, tx *gorm.DB, ev ordered.Event) error { return insertApplied(tx, ev) })
	msg := func(v int64, body string) *mqclient.MessageExt {
		m := ordered.NewMessage("t", "K", v, []byte(body))
		return &mqclient.MessageExt{Message: *m, MsgID: body}
	}
	boom := errors.New("caller fails after the effect")
	run := func(m *mqclient.MessageExt, after error) error {
		return db.Transaction(func(tx *gorm.DB) error {
			if err := eff(ctx, tx, m); err != nil {
				return err
			}
			return after
		})
	}
	count := func() (n int64) { db.Raw("SELECT COUNT(*) FROM applied").Scan(&n); return }

	if err := run(msg(1, "a"), boom); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if v, _ := g.LastVersion(ctx, "K"); v != 0 || count() != 0 {
		t.Fatalf("caller rollback kept version %d, %d effects", v, count())
	}
	if err := run(msg(1, "a"), nil); err != nil {
		t.Fatal(err)
	}
	if err := run(msg(1, "a"), nil); err != nil { // duplicate: acknowledged, no effect
		t.Fatal(err)
	}
	if err := run(msg(3, "c"), nil); !errors.Is(err, ordered.ErrGap) { // strict gap
		t.Fatalf("gap err = %v", err)
	}
	if v, _ := g.LastVersion(ctx, "K"); v != 1 || count() != 1 {
		t.Fatalf("version %d, %d effects; want 1, 1", v, count())
	}
	// Counters record the guard's decisions: the rolled-back first try counts.
	if st := g.Stats(); st.Applied != 2 || st.Duplicates != 1 || st.Gaps != 1 || st.BlockedKeys != 1 {
		t.Fatalf("stats %+v", st)
	}
	if gaps, _ := g.Gaps(ctx, "K"); len(gaps) != 1 || gaps[0].Status != "blocked" {
		t.Fatalf("gap records %+v", gaps)
	}
}
