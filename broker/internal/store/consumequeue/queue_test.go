package consumequeue

import (
	"testing"
)

func TestUnitEncoding(t *testing.T) {
	tests := []struct {
		name string
		u    Unit
	}{
		{"simple", Unit{Offset: 1, Size: 2, TagsCode: 3}},
		{"negative tags", Unit{Offset: 1 << 32, Size: 300, TagsCode: -1}},
		{"hole", Unit{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b [UnitSize]byte
			encode(b[:], tc.u)
			if got := decode(b[:]); got != tc.u {
				t.Fatalf("round trip %+v", got)
			}
		})
	}
	var b [UnitSize]byte
	encode(b[:], Unit{Offset: 1, Size: 2, TagsCode: 3})
	want := []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3}
	if string(b[:]) != string(want) {
		t.Fatalf("layout % x", b)
	}
}

func TestQueuePutReadAcrossFiles(t *testing.T) {
	q, err := Open(t.TempDir(), "t", 0, 10*UnitSize)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for i := int64(0); i < 25; i++ {
		if ok, err := q.Put(i, Unit{Offset: i * 100, Size: 100, TagsCode: i}); !ok || err != nil {
			t.Fatalf("Put(%d) = %v %v", i, ok, err)
		}
	}
	if ok, _ := q.Put(3, Unit{Offset: 1, Size: 1}); ok {
		t.Fatal("rewrote an existing unit")
	}
	if q.MaxOffset() != 25 || q.MinOffset() != 0 {
		t.Fatalf("offsets %d..%d", q.MinOffset(), q.MaxOffset())
	}
	us, err := q.Read(5, 100)
	if err != nil || len(us) != 20 || us[0].Offset != 500 || us[19].TagsCode != 24 {
		t.Fatalf("Read = %d units %v", len(us), err)
	}
	// A gap leaves holes.
	if ok, err := q.Put(32, Unit{Offset: 9999, Size: 5}); !ok || err != nil {
		t.Fatal(err)
	}
	us, _ = q.Read(25, 100)
	if len(us) != 8 || us[0].Size != 0 || us[7].Offset != 9999 {
		t.Fatalf("holes: %+v", us)
	}
}

func TestQueueRecoverAndRetention(t *testing.T) {
	dir := t.TempDir()
	q, err := Open(dir, "t", 1, 10*UnitSize)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 35; i++ {
		q.Put(i, Unit{Offset: i * 100, Size: 100})
	}
	q.Close()
	q, err = Open(dir, "t", 1, 10*UnitSize)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	// The commit log ends at 3050: units 30.. point past it.
	if dropped := q.Recover(3050); dropped != 5 || q.MaxOffset() != 30 {
		t.Fatalf("Recover dropped %d, max %d", dropped, q.MaxOffset())
	}
	if ok, err := q.Put(30, Unit{Offset: 3050, Size: 10}); !ok || err != nil {
		t.Fatal("put after recover", err)
	}
	q.CorrectMinOffset(1250)
	if q.MinOffset() != 13 {
		t.Fatalf("min after correction %d", q.MinOffset())
	}
	if _, err := q.Read(5, 1); err == nil {
		t.Fatal("read below min")
	}
	if n := q.RemoveBefore(2050); n != 2 || q.MinOffset() != 21 {
		t.Fatalf("RemoveBefore = %d, min %d", n, q.MinOffset())
	}
}
