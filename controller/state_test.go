package controller

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// applyAll applies commands through the FSM as Raft would and returns
// the last result.
func applyAll(t *testing.T, f *fsm, cmds ...*command) *result {
	t.Helper()
	var res *result
	for i, c := range cmds {
		res = f.Apply(&raft.Log{Index: uint64(i + 1), Data: c.encode()}).(*result)
	}
	return res
}

func registered(t *testing.T, ids ...int64) *fsm {
	t.Helper()
	f := newFSM()
	for _, id := range ids {
		res := applyAll(t, f, &command{Kind: cmdApplyBrokerID, Cluster: "c", BrokerName: "b", BrokerID: id,
			Addr: addrOf(id), CheckCode: addrOf(id) + ";1"})
		if res.Code != protocol.Success {
			t.Fatalf("apply id %d: %d %s", id, res.Code, res.Remark)
		}
	}
	return f
}

func addrOf(id int64) string { return "127.0.0.1:1091" + string(rune('0'+id)) }

func TestStateApplyBrokerID(t *testing.T) {
	cases := []struct {
		name string
		prep []int64
		cmd  command
		code int16
	}{
		{"first broker must take id 1", nil, command{BrokerID: 2, CheckCode: "x;1"}, protocol.ControllerBrokerIDInvalid},
		{"first broker", nil, command{BrokerID: 1, CheckCode: "x;1"}, protocol.Success},
		{"next free id", []int64{1}, command{BrokerID: 2, CheckCode: "y;1"}, protocol.Success},
		{"id held by another broker", []int64{1}, command{BrokerID: 1, CheckCode: "other;2"}, protocol.ControllerBrokerIDInvalid},
		{"same broker again (restart)", []int64{1}, command{BrokerID: 1, CheckCode: addrOf(1) + ";1"}, protocol.Success},
		{"id below 1", []int64{1}, command{BrokerID: 0, CheckCode: "z;1"}, protocol.ControllerBrokerIDInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := registered(t, tc.prep...)
			c := tc.cmd
			c.Kind, c.Cluster, c.BrokerName = cmdApplyBrokerID, "c", "b"
			if res := applyAll(t, f, &c); res.Code != tc.code {
				t.Fatalf("code = %d (%s), want %d", res.Code, res.Remark, tc.code)
			}
		})
	}
	f := registered(t, 1, 2, 5)
	if got := f.group("b").nextID(); got != 6 {
		t.Fatalf("nextID = %d, want 6", got)
	}
}

func TestStateElectAndAlter(t *testing.T) {
	f := registered(t, 1, 2, 3)
	elect := func(id int64, me, sse int32) *result {
		return applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: id, MasterEpoch: me, SyncStateSetEpoch: sse})
	}
	alter := func(master int64, me, sse int32, set ...int64) *result {
		return applyAll(t, f, &command{Kind: cmdAlterSyncStateSet, BrokerName: "b", BrokerID: master, MasterEpoch: me,
			SyncStateSetEpoch: sse, NewSet: set})
	}
	if res := elect(1, 0, 0); res.Code != protocol.Success || res.Group.MasterID != 1 || res.Group.MasterEpoch != 1 ||
		!reflect.DeepEqual(res.Group.SyncStateSet, []int64{1}) || res.Group.SyncStateSetEpoch != 1 {
		t.Fatalf("first election: %+v %s", res.Group, res.Remark)
	}
	// a proposal computed from old epochs never lands
	if res := elect(2, 0, 0); res.Code != protocol.ControllerElectMasterFailed {
		t.Fatalf("stale election: code %d", res.Code)
	}
	checks := []struct {
		name   string
		master int64
		me     int32
		sse    int32
		set    []int64
		code   int16
	}{
		{"not the master", 2, 1, 1, []int64{1, 2}, protocol.ControllerInvalidMaster},
		{"stale master epoch", 1, 0, 1, []int64{1, 2}, protocol.ControllerFencedMasterEpoch},
		{"stale sync state set epoch", 1, 1, 0, []int64{1, 2}, protocol.ControllerFencedSyncStateSetEpoch},
		{"set without the master", 1, 1, 1, []int64{2, 3}, protocol.ControllerAlterSyncStateSetFailed},
		{"unknown replica", 1, 1, 1, []int64{1, 9}, protocol.ControllerInvalidReplicas},
		{"unchanged set", 1, 1, 1, []int64{1}, protocol.ControllerAlterSyncStateSetFailed},
		{"grow", 1, 1, 1, []int64{3, 1, 2}, protocol.Success},
	}
	for _, tc := range checks {
		if res := alter(tc.master, tc.me, tc.sse, tc.set...); res.Code != tc.code {
			t.Fatalf("%s: code %d (%s), want %d", tc.name, res.Code, res.Remark, tc.code)
		}
	}
	g := f.group("b")
	if !reflect.DeepEqual(g.SyncStateSet, []int64{1, 2, 3}) || g.SyncStateSetEpoch != 2 {
		t.Fatalf("after grow: %s", g)
	}
	// the master dies, 3 takes over: the set restarts with 3 alone
	if res := elect(3, 1, 2); res.Code != protocol.Success || res.Group.MasterEpoch != 2 ||
		!reflect.DeepEqual(res.Group.SyncStateSet, []int64{3}) || res.Group.SyncStateSetEpoch != 3 {
		t.Fatalf("failover: %+v", res.Group)
	}
	// the old master is fenced
	if res := alter(1, 1, 3, 1, 3); res.Code != protocol.ControllerInvalidMaster {
		t.Fatalf("old master alter: code %d", res.Code)
	}
	// no master: epoch bumps, set kept for the in-sync replica's return
	if res := elect(protocol.NoBrokerID, 2, 3); res.Code != protocol.Success || res.Group.HasMaster() ||
		res.Group.MasterEpoch != 3 || !reflect.DeepEqual(res.Group.SyncStateSet, []int64{3}) {
		t.Fatalf("no master: %+v", res.Group)
	}
	if res := alter(3, 2, 3, 3, 1); res.Code != protocol.ControllerInvalidMaster {
		t.Fatalf("alter without master: code %d", res.Code)
	}
}

// An ALTER_SYNC_STATE_SET applied twice: the second time is the client's
// retry after the leader answered "leadership lost while committing log"
// for an entry that had committed. It changes nothing and is answered with
// the set and epoch the first one made (before, it was fenced as a stale
// SyncStateSet epoch, and the master kept its old set and epoch until its
// next GET_REPLICA_INFO). A proposal from the same epoch for another set,
// or the retry once a later change or election happened, is still fenced.
func TestStateAlterAppliedTwice(t *testing.T) {
	f := registered(t, 1, 2, 3)
	alter := func(master int64, me, sse int32, set ...int64) *result {
		return applyAll(t, f, &command{Kind: cmdAlterSyncStateSet, BrokerName: "b", BrokerID: master, MasterEpoch: me,
			SyncStateSetEpoch: sse, NewSet: set})
	}
	want := func(what string, res *result, code int16, set []int64, sse int32) {
		t.Helper()
		if res.Code != code {
			t.Fatalf("%s: code %d (%s), want %d", what, res.Code, res.Remark, code)
		}
		if code == protocol.Success && (!reflect.DeepEqual(res.Group.SyncStateSet, set) || res.Group.SyncStateSetEpoch != sse) {
			t.Fatalf("%s: answered %v at epoch %d, want %v at %d", what, res.Group.SyncStateSet, res.Group.SyncStateSetEpoch, set, sse)
		}
		if g := f.group("b"); !reflect.DeepEqual(g.SyncStateSet, set) || g.SyncStateSetEpoch != sse {
			t.Fatalf("%s: state %s, want %v at epoch %d", what, g, set, sse)
		}
	}
	applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: 1})
	want("first", alter(1, 1, 1, 2, 1), protocol.Success, []int64{1, 2}, 2)
	want("applied again", alter(1, 1, 1, 2, 1), protocol.Success, []int64{1, 2}, 2)
	want("another set from the same epoch", alter(1, 1, 1, 1, 3), protocol.ControllerFencedSyncStateSetEpoch, []int64{1, 2}, 2)
	want("from another broker", alter(2, 1, 1, 1, 2), protocol.ControllerInvalidMaster, []int64{1, 2}, 2)
	want("grow", alter(1, 1, 2, 1, 2, 3), protocol.Success, []int64{1, 2, 3}, 3)
	want("applied again after a later change", alter(1, 1, 1, 1, 2), protocol.ControllerFencedSyncStateSetEpoch, []int64{1, 2, 3}, 3)
	want("shrink", alter(1, 1, 3, 1, 2), protocol.Success, []int64{1, 2}, 4)
	want("shrink applied again", alter(1, 1, 3, 2, 1), protocol.Success, []int64{1, 2}, 4)
	applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: 2, MasterEpoch: 1, SyncStateSetEpoch: 4})
	want("applied again after an election", alter(1, 1, 3, 1, 2), protocol.ControllerInvalidMaster, []int64{2}, 5)
}

func TestFSMBadCommands(t *testing.T) {
	f := registered(t, 1)
	for _, data := range [][]byte{[]byte("{"), []byte(`{"kind":"dropTables"}`), nil} {
		res := f.Apply(&raft.Log{Index: 9, Data: data}).(*result)
		if res.Code != protocol.ControllerInvalidRequest {
			t.Errorf("%q: code %d", data, res.Code)
		}
	}
	for _, c := range []*command{
		{Kind: cmdElectMaster, BrokerName: "nope", BrokerID: 1},
		{Kind: cmdUpdateAddr, BrokerName: "b", BrokerID: 7, Addr: "x"},
		{Kind: cmdAlterSyncStateSet, BrokerName: "nope"},
		{Kind: cmdElectMaster, BrokerName: "b", BrokerID: 9},
	} {
		if res := applyAll(t, f, c); res.Code == protocol.Success {
			t.Errorf("%+v applied", c)
		}
	}
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestFSMSnapshotRestore(t *testing.T) {
	f := registered(t, 1, 2)
	applyAll(t, f, &command{Kind: cmdElectMaster, BrokerName: "b", BrokerID: 1},
		&command{Kind: cmdAlterSyncStateSet, BrokerName: "b", BrokerID: 1, MasterEpoch: 1, SyncStateSetEpoch: 1, NewSet: []int64{1, 2}})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// changes after the snapshot is taken are not in it
	applyAll(t, f, &command{Kind: cmdUpdateAddr, BrokerName: "b", BrokerID: 2, Addr: "moved"})
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	g := newFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	got := g.group("b")
	if got.MasterID != 1 || got.MasterEpoch != 1 || !reflect.DeepEqual(got.SyncStateSet, []int64{1, 2}) ||
		got.SyncStateSetEpoch != 2 || got.Replicas[2].Addr != addrOf(2) {
		t.Fatalf("restored %s", got)
	}
	if err := g.Restore(io.NopCloser(bytes.NewReader([]byte("not json")))); err == nil {
		t.Fatal("restore of garbage succeeded")
	}
	if b, _ := json.Marshal(g.state); !bytes.Contains(b, []byte(`"masterEpoch":1`)) {
		t.Fatalf("state json: %s", b)
	}
}
