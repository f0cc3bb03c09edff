package kvconfig

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestStorePersistsAcrossOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "kvConfig.json")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("ORDER_TOPIC_CONFIG", "t", "broker-a:4"); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("ns", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "k"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("ns", "missing"); err != nil {
		t.Fatal(err)
	}

	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s2.Get("ORDER_TOPIC_CONFIG", "t"); !ok || v != "broker-a:4" {
		t.Fatalf("get %q %v", v, ok)
	}
	if _, ok := s2.List("ns"); ok {
		t.Fatal("emptied namespace survived")
	}
	if got := s2.Namespaces(); !reflect.DeepEqual(got, []string{"ORDER_TOPIC_CONFIG"}) {
		t.Fatalf("namespaces %v", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

func TestStoreReadsJavaFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	os.WriteFile(path, []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"a":"b:1"},"empty":{}}}`), 0o644)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	kv, ok := s.List("ORDER_TOPIC_CONFIG")
	if !ok || !reflect.DeepEqual(kv, map[string]string{"a": "b:1"}) {
		t.Fatalf("list %v %v", kv, ok)
	}
	kv["x"] = "y" // a copy
	if _, ok := s.Get("ORDER_TOPIC_CONFIG", "x"); ok {
		t.Fatal("List shares state")
	}
}

func TestStoreCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	os.WriteFile(path, []byte(`{"configTable":`), 0o644)
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err %v", err)
	}
}

func TestStoreMemoryOnly(t *testing.T) {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("n", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.Get("n", "k"); v != "v" {
		t.Fatal("memory store lost the value")
	}
}

func TestStoreWriteFailureKeepsTable(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "conf")
	s, err := Open(filepath.Join(parent, "kvConfig.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The parent directory is replaced by a regular file: every write
	// fails (permissions would not stop root).
	if err := os.WriteFile(parent, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("n", "k", "v"); err == nil {
		t.Fatal("write into a file path succeeded")
	}
	if _, ok := s.Get("n", "k"); ok {
		t.Fatal("failed Put changed the table")
	}
}
