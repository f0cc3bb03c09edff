package telemetry

import (
	"strings"
	"testing"
)

// TestNewRegistryCollectsRuntime: the registry gathers the Go runtime's
// and the process's metrics, and a second registry is independent.
func TestNewRegistryCollectsRuntime(t *testing.T) {
	for range 2 {
		mfs, err := NewRegistry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, mf := range mfs {
			seen[strings.SplitN(mf.GetName(), "_", 2)[0]] = true
		}
		if !seen["go"] || !seen["process"] {
			t.Fatalf("families %v, want go_* and process_*", seen)
		}
	}
}
