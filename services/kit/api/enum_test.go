package api

import "testing"

func TestEnum(t *testing.T) {
	type status string
	e := NewEnum(map[status]int32{"CREATED": 1, "PAID": 2})
	if e.API("CREATED") != 1 || e.API("PAID") != 2 || e.API("OTHER") != 0 {
		t.Fatalf("API: %d %d %d", e.API("CREATED"), e.API("PAID"), e.API("OTHER"))
	}
	if d, ok := e.Domain(2); d != "PAID" || !ok {
		t.Fatalf("Domain(2) = %q, %v", d, ok)
	}
	if d, ok := e.Domain(0); d != "" || ok {
		t.Fatalf("Domain(0) = %q, %v, want none", d, ok)
	}
}
