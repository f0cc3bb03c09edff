package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "checkpoint")
	if _, ok, err := Load(p); ok || err != nil {
		t.Fatalf("missing file: ok=%v err=%v", ok, err)
	}
	want := Checkpoint{PhysicTimestamp: 1, LogicsTimestamp: 2, IndexTimestamp: 3, PhysicOffset: 1 << 40, LogicsOffset: 12345}
	if err := Save(p, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Load(p)
	if err != nil || !ok || got != want {
		t.Fatalf("Load = %+v %v %v", got, ok, err)
	}
}

func TestCheckpointDecodeErrors(t *testing.T) {
	good := Checkpoint{PhysicOffset: 99}.Encode()
	flipped := append([]byte(nil), good...)
	flipped[30] ^= 1
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:20]},
		{"bit flip", flipped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(tc.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode: %v", err)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "checkpoint")
	os.WriteFile(p, flipped, 0o644)
	if _, ok, err := Load(p); ok || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Load corrupt: %v %v", ok, err)
	}
}
