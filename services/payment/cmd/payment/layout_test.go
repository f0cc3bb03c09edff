package main

import (
	"testing"

	"github.com/tidemq/tide/services/kit/layout"
)

// TestLayout: the service's internal packages import each other as
// server -> service -> biz <- data (services/kit/layout).
func TestLayout(t *testing.T) {
	bad, err := layout.Check("../..", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
