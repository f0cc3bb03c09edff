package protocol

import (
	"path/filepath"
	"testing"
)

// FuzzJSONHeaderFast: whatever the fast JSON header decoder accepts, it
// decodes exactly as encoding/json does.
func FuzzJSONHeaderFast(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.bin"))
	for _, file := range files {
		f.Add(goldenHeader(f, file))
	}
	f.Add([]byte(`{"extFields":{"a":"\u0001"}}`))
	f.Fuzz(func(t *testing.T, hdr []byte) {
		checkFastJSON(t, hdr)
	})
}
