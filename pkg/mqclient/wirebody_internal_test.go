package mqclient

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/tidemq/tide/pkg/remoting/protocol"
)

// wantBatch is a batch body of items encoded the plain way
// (protocol.AppendBatch), each item's properties followed by its stamp
// (sequence st.Sequence+i) unless st is nil.
func wantBatch(t *testing.T, items []batchItem, st *protocol.ProducerStamp) []byte {
	t.Helper()
	its := make([]protocol.BatchItem, len(items))
	for i, it := range items {
		props := it.props
		if st != nil {
			s := *st
			s.Sequence += int64(i)
			props += string(protocol.AppendStampProperty(nil, s))
		}
		its[i] = protocol.BatchItem{Flag: it.flag, Body: it.body, Properties: props}
	}
	b, err := protocol.AppendBatch(nil, its)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWireBodyPooled checks the batch body wireBody encodes into its
// pooled buffer: the same bytes as a fresh encoding for each stamp (and
// without one), one encoding reused while the stamp stays, encoded again
// in place for a new stamp, and encoded again after releaseWire.
func TestWireBodyPooled(t *testing.T) {
	items := make([]batchItem, 5)
	for i := range items {
		body := bytes.Repeat([]byte{byte('a' + i)}, 100+i)
		props := protocol.EncodeProperties(map[string]string{protocol.PropUniqKey: fmt.Sprintf("ID%03d", i), protocol.PropTags: "t"})
		items[i] = batchItem{flag: int32(i), body: body, props: props}
	}
	o := &outgoing{batch: true, items: items, props: map[string]string{}}
	q := Queue{Topic: "T", BrokerName: "b", QueueID: 3}
	s1 := &stamp{q: q, st: protocol.ProducerStamp{ProducerID: 7, Epoch: 2, Sequence: 40}}
	s2 := &stamp{q: q, st: protocol.ProducerStamp{ProducerID: 7, Epoch: 2, Sequence: 45}}

	body := func() []byte {
		t.Helper()
		b, err := o.wireBody()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	o.stamp = s1
	b1 := body()
	if want := wantBatch(t, items, &s1.st); !bytes.Equal(b1, want) {
		t.Fatalf("stamped body differs from a fresh encoding:\n got %q\nwant %q", b1, want)
	}
	want1 := bytes.Clone(b1)
	if again := body(); &again[0] != &b1[0] || !bytes.Equal(again, want1) {
		t.Fatal("a second attempt with the same stamp did not reuse the encoded body")
	}
	o.stamp = s2 // a retry to another queue: a new sequence
	b2 := body()
	if want := wantBatch(t, items, &s2.st); !bytes.Equal(b2, want) {
		t.Fatalf("body for the new stamp differs from a fresh encoding:\n got %q\nwant %q", b2, want)
	}
	o.stamp = nil // a broker without the feature
	if got, want := body(), wantBatch(t, items, nil); !bytes.Equal(got, want) {
		t.Fatalf("plain body differs from AppendBatch:\n got %q\nwant %q", got, want)
	}
	o.releaseWire()
	if o.wire != nil || o.wireFor != nil {
		t.Fatal("releaseWire kept the buffer")
	}
	o.releaseWire() // twice is harmless
	o.stamp = s1
	if got := body(); !bytes.Equal(got, want1) {
		t.Fatalf("body after releaseWire differs:\n got %q\nwant %q", got, want1)
	}
	o.releaseWire()

	// A single message's body is its own, never pooled.
	single := &outgoing{body: []byte("x"), props: map[string]string{}}
	if got, _ := single.wireBody(); &got[0] != &single.body[0] {
		t.Fatal("a single message's body was copied")
	}
	single.releaseWire()
}

// TestWireBodyPlainTooLong checks that a plain batch (no stamp) whose
// item has properties over the limit fails as AppendBatch did.
func TestWireBodyPlainTooLong(t *testing.T) {
	long := string(bytes.Repeat([]byte{'p'}, protocol.MaxPropertiesLength+1))
	o := &outgoing{batch: true, items: []batchItem{{body: []byte("b"), props: long}}, props: map[string]string{}}
	defer o.releaseWire()
	if _, err := o.wireBody(); err == nil || !errors.Is(err, ErrInvalidMessage) || !errors.Is(err, protocol.ErrMalformed) {
		t.Fatalf("wireBody = %v, want ErrInvalidMessage and protocol.ErrMalformed", err)
	}
}
