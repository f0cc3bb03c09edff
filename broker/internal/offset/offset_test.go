package offset

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestTableCommitQueryPersist(t *testing.T) {
	p := filepath.Join(t.TempDir(), "consumerOffset.json")
	tb, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.Query("g", "t", 0); ok {
		t.Fatal("empty table reports an offset")
	}
	tb.Commit("g", "t", 0, 5)
	tb.Commit("g", "t", 1, 7)
	tb.Commit("g2", "t", 0, 1)
	tb.Commit("g", "other@x", 0, 2) // '@' in a topic must not confuse group lookup
	if off, ok := tb.Query("g", "t", 1); !ok || off != 7 {
		t.Fatalf("query = %d %v", off, ok)
	}
	if err := tb.Persist(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(re.QueueOffsets("g", "t"), map[int32]int64{0: 5, 1: 7}) {
		t.Fatalf("reloaded %v", re.QueueOffsets("g", "t"))
	}
	if got := re.Groups("t"); !reflect.DeepEqual(got, []string{"g", "g2"}) {
		t.Fatalf("groups %v", got)
	}
	re.RemoveTopic("t")
	if got := re.Topics("g"); !reflect.DeepEqual(got, []string{"other@x"}) {
		t.Fatalf("topics after remove %v", got)
	}
	re.RemoveGroup("g")
	if len(re.Snapshot()) != 0 {
		t.Fatalf("snapshot %v", re.Snapshot())
	}
}
