package main

import (
	"testing"

	"github.com/tidemq/tide/services/kit/layout"
)

// TestLayout: the service's internal packages import each other as
// server -> service -> biz <- data (services/kit/layout).
func TestLayout(t *testing.T) {
	layout.Assert(t, "../..", nil)
}
