package subgroup

import (
	"path/filepath"
	"testing"
)

func TestTableAutoCreatePersist(t *testing.T) {
	p := filepath.Join(t.TempDir(), "subscriptionGroup.json")
	tb, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tb.GetOrCreate("g", false); ok {
		t.Fatal("created without autoCreate")
	}
	c, ok := tb.GetOrCreate("g", true)
	if !ok || c.RetryMaxTimes != 16 || c.RetryQueueNums != 1 || !c.ConsumeEnable {
		t.Fatalf("defaults %+v", c)
	}
	if err := tb.Persist(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := re.Get("g"); !ok {
		t.Fatal("not persisted")
	}
	re.Delete("g")
	if len(re.Names()) != 0 {
		t.Fatal("delete")
	}
}
