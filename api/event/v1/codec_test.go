package v1

import (
	"errors"
	"regexp"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestCodecRoundTrip(t *testing.T) {
	now := timestamppb.Now()
	tests := []struct {
		name string
		msg  proto.Message
	}{
		{"OrderCreated", &OrderCreated{OrderId: "o1", Seq: 1, UserId: "u1", TotalAmount: 300,
			Items: []*LineItem{{ProductId: "p1", Quantity: 3, UnitPrice: 100}}, CancelAt: now, CreatedAt: now}},
		{"OrderCancelled", &OrderCancelled{OrderId: "o1", Seq: 2, Reason: "timeout", CancelledAt: now}},
		{"OrderPaid", &OrderPaid{OrderId: "o1", Seq: 2, PaymentId: "p", Amount: 300, PaidAt: now}},
		{"OrderCancelTimer", &OrderCancelTimer{OrderId: "o1", DueAt: now}},
		{"StockReserved", &StockReserved{OrderId: "o1", Seq: 1, ReservedAt: now}},
		{"StockRejected", &StockRejected{OrderId: "o1", Seq: 1, Reason: "short", ProductId: "p1"}},
		{"StockReleased", &StockReleased{OrderId: "o1", Seq: 2}},
		{"PaymentSucceeded", &PaymentSucceeded{OrderId: "o1", Seq: 1, PaymentId: "p", UserId: "u1", Amount: 300}},
		{"PaymentRefunded", &PaymentRefunded{OrderId: "o1", Seq: 2, PaymentId: "p", Amount: 300, Reason: "cancelled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Tag(tt.msg); got != tt.name {
				t.Fatalf("Tag = %q, want %q", got, tt.name)
			}
			b, err := Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Decode(Tag(tt.msg), b)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, tt.msg) {
				t.Fatalf("round trip: got %v, want %v", got, tt.msg)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	if _, err := Decode("Nope", []byte(`{}`)); !errors.Is(err, ErrUnknownTag) {
		t.Fatalf("unknown tag: err = %v", err)
	}
	if _, err := Decode(TagOrderCreated, []byte(`{`)); err == nil {
		t.Fatal("bad body: no error")
	}
	if _, err := Decode(TagOrderCreated, []byte(`{"order_id":"o","future_field":1}`)); err != nil {
		t.Fatalf("unknown field: %v", err)
	}
}

func TestNamesValid(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z0-9-]+$`)
	for _, n := range []string{TopicOrderEvents, TopicOrderCancelTimer, TopicInventoryEvents, TopicPaymentEvents,
		GroupOrderProducer, GroupInventoryProducer, GroupPaymentProducer,
		GroupOrder, GroupOrderTimer, GroupInventory, GroupPayment} {
		if !valid.MatchString(n) {
			t.Errorf("name %q: want lower-case letters, digits and '-' only", n)
		}
	}
}
