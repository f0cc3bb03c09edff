package broker

import (
	"context"
	"net/netip"
	"testing"

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
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 20 * 100
	cfg.MaxMessageSize = 16 << 10
	st, err := store.Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
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
