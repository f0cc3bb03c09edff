package controller

import (
	"bytes"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// TestElectionHistory: every applied election is recorded with the
// proposer's time and trigger, the old and new master and the
// SyncStateSet after it; a refused one is not; a group keeps the last
// MaxElectionHistory; the history survives a snapshot and restore.
func TestElectionHistory(t *testing.T) {
	f := registered(t, 1, 2)
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	elect := func(id int64, me, sse int32, reason string, ms int64) *result {
		return applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: id, MasterEpoch: me, SyncStateSetEpoch: sse,
			Time: at.UnixMilli() + ms, Reason: reason})
	}
	if res := elect(1, 0, 0, triggerBroker, 0); res.Code != protocol.Success {
		t.Fatalf("first election: %d %s", res.Code, res.Remark)
	}
	applyAll(t, f, &command{Kind: cmdAlterSyncStateSet, BrokerName: "b", BrokerID: 1, MasterEpoch: 1, SyncStateSetEpoch: 1, NewSet: []int64{1, 2}})
	if res := elect(2, 1, 2, triggerController, 1000); res.Code != protocol.Success {
		t.Fatalf("failover: %d %s", res.Code, res.Remark)
	}
	if res := elect(1, 1, 2, triggerAdmin, 2000); res.Code == protocol.Success { // stale epochs: refused
		t.Fatal("stale election applied")
	}
	if res := elect(protocol.NoBrokerID, 2, 3, triggerController, 3000); res.Code != protocol.Success {
		t.Fatalf("master lost: %d %s", res.Code, res.Remark)
	}
	want := []protocol.Election{
		{Time: at, Group: "b", OldMaster: protocol.NoBrokerID, NewMaster: 1, NewMasterAddr: addrOf(1), Epoch: 1,
			Reason: triggerBroker, SyncStateSet: []int64{1}},
		{Time: at.Add(time.Second), Group: "b", OldMaster: 1, OldMasterAddr: addrOf(1), NewMaster: 2, NewMasterAddr: addrOf(2),
			Epoch: 2, Reason: triggerController, SyncStateSet: []int64{2}},
		{Time: at.Add(3 * time.Second), Group: "b", OldMaster: 2, OldMasterAddr: addrOf(2), NewMaster: protocol.NoBrokerID,
			Epoch: 3, Reason: triggerController, SyncStateSet: []int64{2}},
	}
	if got := f.elections("b"); !reflect.DeepEqual(got, want) {
		t.Fatalf("history\n got %+v\nwant %+v", got, want)
	}
	if got := f.elections("other"); len(got) != 0 {
		t.Fatalf("history of an unknown group: %+v", got)
	}

	// snapshot and restore keep it, and it goes on growing
	restored := newFSM()
	restoreFrom(t, f, restored)
	if got := restored.elections(""); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored history\n got %+v\nwant %+v", got, want)
	}

	// bounded: the last MaxElectionHistory are kept, oldest first
	me, sse := int32(3), int32(3)
	for i := 0; i < protocol.MaxElectionHistory+20; i++ {
		res := elect(int64(1+i%2), me, sse, triggerController, int64(10000+i))
		if res.Code != protocol.Success {
			t.Fatalf("election %d: %d %s", i, res.Code, res.Remark)
		}
		me, sse = res.Group.MasterEpoch, res.Group.SyncStateSetEpoch
	}
	got := f.elections("b")
	if len(got) != protocol.MaxElectionHistory || got[len(got)-1].Epoch != me || got[0].Epoch != me-protocol.MaxElectionHistory+1 {
		t.Fatalf("bounded history: %d entries, epochs %d..%d, last epoch %d", len(got), got[0].Epoch, got[len(got)-1].Epoch, me)
	}
}

// TestRestoreSnapshotWithoutHistory: a snapshot written before the
// election history existed restores (groups intact, empty history), and
// elections after it are recorded.
func TestRestoreSnapshotWithoutHistory(t *testing.T) {
	old := `{"groups":{"b":{"cluster":"c","brokerName":"b","replicas":{"1":{"addr":"a1","checkCode":"a1;1"},` +
		`"2":{"addr":"a2","checkCode":"a2;1"}},"masterId":1,"masterEpoch":4,"syncStateSet":[1,2],"syncStateSetEpoch":7}}}`
	f := newFSM()
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte(old)))); err != nil {
		t.Fatal(err)
	}
	if g := f.group("b"); g == nil || g.MasterEpoch != 4 || g.MasterAddr() != "a1" {
		t.Fatalf("restored group %v", g)
	}
	if h := f.elections(""); len(h) != 0 {
		t.Fatalf("history from an old snapshot: %+v", h)
	}
	res := applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: 2, MasterEpoch: 4, SyncStateSetEpoch: 7, Reason: triggerAdmin})
	if res.Code != protocol.Success {
		t.Fatalf("election: %d %s", res.Code, res.Remark)
	}
	h := f.elections("b")
	if len(h) != 1 || h[0].OldMasterAddr != "a1" || h[0].NewMasterAddr != "a2" || h[0].Epoch != 5 || !h[0].Time.IsZero() {
		t.Fatalf("history after the old snapshot: %+v", h)
	}
}

func restoreFrom(t *testing.T, from, to *fsm) {
	t.Helper()
	snap, err := from.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	if err := to.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
}
