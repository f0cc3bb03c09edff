package broker

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestConfirmOffsetBeforeFollowing: a broker that is not the master and
// does not follow one yet (just demoted, or started) makes nothing new
// visible, nor does one following without an HA client (being promoted);
// one that follows answers the master's confirm offset it received
// (controller/confirm_test.go). A demoted master used to answer its
// end at once and dispatched its unconfirmed tail before truncating it
// (chaos finding 5: consumers committed past it and skipped the new
// master's acknowledged messages at the same queue offsets).
func TestConfirmOffsetBeforeFollowing(t *testing.T) {
	st := smallStore(t)
	st.SetDispatchLimit(func() int64 { return 0 }) // the tail is not confirmed
	host := netip.MustParseAddrPort("10.0.0.1:5000")
	m := &protocol.MessageExt{QueueID: 0, BornHost: host, StoreHost: host}
	m.Topic, m.Body = "T", []byte("unconfirmed")
	if _, err := st.PutMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	b := &Broker{store: st}
	cm := &controllerMode{running: "slave"}
	if got := b.confirmOffset(cm); got != st.DispatchedOffset() || got == st.MaxPhyOffset() {
		t.Errorf("demoted, not following: confirm offset %d, want the dispatched %d (end %d)", got, st.DispatchedOffset(), st.MaxPhyOffset())
	}
	cm.following = "10.0.0.2:10911"
	if got := b.confirmOffset(cm); got != st.DispatchedOffset() {
		t.Errorf("following, no HA client: confirm offset %d, want the dispatched %d", got, st.DispatchedOffset())
	}
}

// TestControllerModeStartHoldsUnconfirmedTail: a broker that starts in
// controller mode over a store whose tail was never confirmed (a killed
// master coming back) does not dispatch that tail while it opens, before
// it knows its role (joinControllers sets the confirm offset limit).
// Before, store.Open dispatched every record, and consumers could read
// the tail until the truncation; in 4.x mode it still does.
func TestControllerModeStartHoldsUnconfirmedTail(t *testing.T) {
	for _, tc := range []struct {
		name       string
		controller bool
		want       int64 // consume queue units after New
	}{{"controller mode", true, 1}, {"4.x mode", false, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.BrokerIP1 = "127.0.0.1"
			o.Store.StorePathRootDir = t.TempDir()
			o.Store.MappedFileSizeCommitLog = 64 << 10
			o.Store.MappedFileSizeConsumeQueue = 20 * 100
			o.Store.MaxMessageSize = 16 << 10
			if tc.controller {
				o.EnableControllerMode, o.ControllerAddr = true, "127.0.0.1:1"
			}
			st, err := store.Open(o.Store, nil)
			if err != nil {
				t.Fatal(err)
			}
			host := netip.MustParseAddrPort("10.0.0.1:5000")
			put := func(body string) {
				m := &protocol.MessageExt{QueueID: 0, BornHost: host, StoreHost: host}
				m.Topic, m.Body = "T", []byte(body)
				if _, err := st.PutMessage(context.Background(), m); err != nil {
					t.Fatal(err)
				}
			}
			put("confirmed")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := st.WaitDispatched(ctx, st.MaxPhyOffset()); err != nil {
				t.Fatal(err)
			}
			confirmed := st.MaxPhyOffset()
			st.SetDispatchLimit(func() int64 { return confirmed })
			put("never acknowledged 1")
			put("never acknowledged 2")
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}

			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			b, err := New(o, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Shutdown(context.Background())
			if got := b.store.MaxOffset("T", 0); got != tc.want {
				t.Fatalf("consume queue units after New: %d, want %d", got, tc.want)
			}
		})
	}
}
