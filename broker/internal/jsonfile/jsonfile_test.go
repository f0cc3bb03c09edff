package jsonfile

import (
	"os"
	"path/filepath"
	"testing"
)

type table struct {
	Counter int            `json:"counter"`
	Items   map[string]int `json:"items"`
}

func TestSaveLoadRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config", "t.json")
	var got table
	found, err := Load(p, &got)
	if err != nil || found {
		t.Fatalf("missing file: found=%v err=%v", found, err)
	}
	want := table{Counter: 3, Items: map[string]int{"a": 1}}
	if err := Save(p, want); err != nil {
		t.Fatal(err)
	}
	if found, err := Load(p, &got); err != nil || !found {
		t.Fatalf("found=%v err=%v", found, err)
	}
	if got.Counter != 3 || got.Items["a"] != 1 {
		t.Fatalf("got %+v", got)
	}
}

func TestLoadFallsBackToBackup(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.json")
	if err := Save(p, table{Counter: 1}); err != nil {
		t.Fatal(err)
	}
	if err := Save(p, table{Counter: 2}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got table
	if found, err := Load(p, &got); err != nil || !found || got.Counter != 1 {
		t.Fatalf("found=%v err=%v got=%+v", found, err, got)
	}
	os.Remove(p + ".bak")
	if _, err := Load(p, &got); err == nil {
		t.Fatal("corrupt file without backup: want error")
	}
}
