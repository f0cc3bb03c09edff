package broker

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"testing"

	"github.com/tidemq/tide/broker/internal/ha"
	"github.com/tidemq/tide/broker/internal/store"
	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// smallStore opens an empty store with small files in a temporary
// directory, closed when the test ends.
func smallStore(t *testing.T) *store.Store {
	t.Helper()
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
	return st
}

// syncSetStore opens a small store holding one record, so the commit log
// end is above every replica's ack (none is connected).
func syncSetStore(t *testing.T) *store.Store {
	t.Helper()
	st := smallStore(t)
	host := netip.MustParseAddrPort("10.0.0.1:5000")
	m := &protocol.MessageExt{QueueID: 0, BornHost: host, StoreHost: host}
	m.Topic, m.Body = "T", []byte("acknowledged under the old set")
	if _, err := st.PutMessage(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSyncStateSetProposalInForce: while a SyncStateSet change is in
// flight the master acknowledges and confirms by the committed set joined
// by the proposal. A member being added counts before the controller may
// elect it; a member being dropped counts until the controller commits
// the shrink. Before, a grow took effect only once the answer arrived: a
// lost answer left the master acknowledging writes the controller's new
// member might not have.
func TestSyncStateSetProposalInForce(t *testing.T) {
	st := syncSetStore(t)
	b := &Broker{store: st}
	o := DefaultOptions()
	o.InSyncReplicas, o.AllAckInSyncStateSet = 1, true
	for _, tc := range []struct {
		name              string
		committed, propos []int64
		wantAck           []int64
		wantConfirmAtEnd  bool
	}{
		{"no proposal", []int64{1}, nil, nil, true},
		{"grow in flight", []int64{1}, []int64{1, 2}, []int64{2}, false},
		{"shrink in flight", []int64{1, 2}, []int64{1}, []int64{2}, false},
		{"replace in flight", []int64{1, 2}, []int64{1, 3}, []int64{2, 3}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &controllerMode{id: 1, running: "master", syncSet: tc.committed, syncEpoch: 4, proposed: tc.propos}
			ids, need := cm.ackRule(&o)
			if !slices.Equal(ids, tc.wantAck) || need != len(tc.wantAck) {
				t.Errorf("ack rule %v need %d, want %v need %d", ids, need, tc.wantAck, len(tc.wantAck))
			}
			got := b.confirmOffset(cm)
			if at := got == st.MaxPhyOffset(); at != tc.wantConfirmAtEnd {
				t.Errorf("confirm offset %d (end %d): at the end %v, want %v", got, st.MaxPhyOffset(), at, tc.wantConfirmAtEnd)
			}
		})
	}
}

// TestSyncStateSetAnswerEndsProposal: the controller's answer (to the
// alter or to the next poll) ends the proposal, whatever it holds; an
// answer older than the known set changes nothing.
func TestSyncStateSetAnswerEndsProposal(t *testing.T) {
	for _, tc := range []struct {
		name         string
		answer       protocol.SyncStateSet
		wantSet      []int64
		wantProposal bool
	}{
		{"committed", protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 5}, []int64{1, 2}, false},
		{"not committed", protocol.SyncStateSet{SyncStateSet: []int64{1}, SyncStateSetEpoch: 4}, []int64{1}, false},
		{"stale answer", protocol.SyncStateSet{SyncStateSet: []int64{1, 3}, SyncStateSetEpoch: 3}, []int64{1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := &controllerMode{id: 1, running: "master", syncSet: []int64{1}, syncEpoch: 4, proposed: []int64{1, 2}}
			cm.setSyncStateSet(&tc.answer)
			if !slices.Equal(cm.syncSet, tc.wantSet) || (cm.proposed != nil) != tc.wantProposal {
				t.Errorf("after the answer: set %v proposal %v, want set %v, proposal kept %v", cm.syncSet, cm.proposed, tc.wantSet, tc.wantProposal)
			}
		})
	}
}

// TestAdmitGrownWaitsForTheEnd: a member is proposed for the set only once
// it has acknowledged the commit log end as it stood when the proposal
// took effect; one that has not (here: never connected) is left out of
// the proposal and of the mark, and a shrink alone goes through at once.
func TestAdmitGrownWaitsForTheEnd(t *testing.T) {
	st := syncSetStore(t)
	o := DefaultOptions()
	o.BrokerHeartbeatInterval = 50
	b := &Broker{store: st, opts: o, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv, err := ha.NewServer(st, ha.ServerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cm := &controllerMode{id: 1, running: "master", syncSet: []int64{1, 2}, syncEpoch: 4}
	got := b.admitGrown(context.Background(), cm, srv, []int64{1, 2}, []int64{1, 3})
	if !slices.Equal(got, []int64{1}) || !slices.Equal(cm.proposed, []int64{1}) {
		t.Errorf("3 never acked: proposal %v, mark %v, want [1] for both", got, cm.proposed)
	}
	if ids, _ := cm.ackRule(&b.opts); !slices.Equal(ids, []int64{2}) {
		t.Errorf("ack rule while the shrink is in flight: %v, want [2]", ids)
	}
}
