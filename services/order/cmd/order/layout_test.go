package main

import (
	"testing"

	"github.com/tidemq/tide/services/kit/layout"
)

// TestLayout: the service's internal packages import each other as
// server -> service -> biz <- data (services/kit/layout).
func TestLayout(t *testing.T) {
	// The sweeper and the list-query binder still call biz directly.
	layout.Assert(t, "../..", map[string][]string{"server": {"biz"}})
}
