package ordered_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"gorm.io/gorm"

	"github.com/tidemq/tide/pkg/mqclient"
	"github.com/tidemq/tide/pkg/mqclient/ordered"
	"github.com/tidemq/tide/pkg/testenv"
	"github.com/tidemq/tide/pkg/tidetest"
)

// TestGapRowsFollowResolveAndResend is an operator's recovery of a parked
// key (strict): v1 applied, v2 lost, v3 and v4 refused (blocked gap rows),
// Resolve(key, 2) declares v2 done, v3 and v4 are resent from the DLQ and
// applied. No gap row may stay "blocked" once its version is applied (the
// schema's "blocked" means "not applied"): v3's row is "resolved" (Resolve
// covered it), v4's "applied".
func TestGapRowsFollowResolveAndResend(t *testing.T) {
	db := openDB(t, testenv.MariaDB(t).DSN)
	ctx := context.Background()
	if err := ordered.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("CREATE TABLE applied (id BIGINT AUTO_INCREMENT PRIMARY KEY, biz_key VARCHAR(64) NOT NULL, version BIGINT NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	g, err := ordered.New(db, "resolve", ordered.WithLogger(tidetest.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	h := g.Handler(func(_ context.Context, tx *gorm.DB, ev ordered.Event) error { return insertApplied(tx, ev) })
	deliver := func(v int64) error {
		m := ordered.NewMessage("t", "K", v, []byte(fmt.Sprintf("K@%d", v)))
		return h(ctx, &mqclient.MessageExt{Message: *m, MsgID: fmt.Sprintf("id-%d", v)})
	}
	status := func() map[int64]string {
		gaps, err := g.Gaps(ctx, "K")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]string{}
		for _, r := range gaps {
			out[r.Version] = r.Status
		}
		return out
	}

	if err := deliver(1); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{3, 4, 3, 4} { // refused, retried, dead-lettered
		if err := deliver(v); !errors.Is(err, ordered.ErrGap) {
			t.Fatalf("v%d: %v, want ErrGap", v, err)
		}
	}
	if st := status(); st[3] != "blocked" || st[4] != "blocked" || len(st) != 2 {
		t.Fatalf("gap rows before Resolve: %v", st)
	}
	if err := g.Resolve(ctx, "K", 2); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{3, 4} { // the operator resends the dead letters in order
		if err := deliver(v); err != nil {
			t.Fatalf("resent v%d: %v", v, err)
		}
	}
	if v, _ := g.LastVersion(ctx, "K"); v != 4 {
		t.Fatalf("last version %d, want 4", v)
	}
	if st := status(); st[3] != "resolved" || st[4] != "applied" {
		t.Fatalf("gap rows after Resolve and resend: %v, want 3 resolved and 4 applied (none blocked)", st)
	}
	if n := g.Stats().BlockedKeys; n != 0 {
		t.Errorf("%d keys still blocked", n)
	}
}
