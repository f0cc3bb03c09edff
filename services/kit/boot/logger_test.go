package boot

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/go-kratos/kratos/v2/log"
)

// TestKratosWritesThroughSlog: a record logged through the Kratos view
// is one JSON record of the slog logger, with its message, level,
// attributes and the service name.
func TestKratosWritesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	_, kl := Logger(&buf, "svc")
	log.NewHelper(kl).Warnw("msg", "refused", "code", 400)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %q: %v", buf.String(), err)
	}
	for k, want := range map[string]any{"msg": "refused", "level": "WARN", "code": float64(400), "service": "svc"} {
		if rec[k] != want {
			t.Errorf("%s = %v, want %v (record %s)", k, rec[k], want, buf.String())
		}
	}
	if _, ok := rec["trace_id"]; ok {
		t.Errorf("trace_id without a span: %s", buf.String())
	}
}
