package layout

import "testing"

func TestLayer(t *testing.T) {
	tests := []struct{ in, layer, prefix string }{
		{"github.com/x/svc/internal/server", "server", "github.com/x/svc/internal/"},
		{"github.com/x/svc/internal/data/migrations", "data", "github.com/x/svc/internal/"},
		{"github.com/x/svc/cmd/svc", "", ""},
	}
	for _, tt := range tests {
		if l, p := layer(tt.in); l != tt.layer || p != tt.prefix {
			t.Errorf("layer(%q) = %q, %q; want %q, %q", tt.in, l, p, tt.layer, tt.prefix)
		}
	}
}

// TestCheckFindsUpwardImport: with server allowed nothing, a service whose
// server imports service is reported (the check can fail).
func TestCheckFindsUpwardImport(t *testing.T) {
	saved := Allowed["server"]
	Allowed["server"] = nil
	defer func() { Allowed["server"] = saved }()
	bad, err := Check("../../inventory", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) == 0 {
		t.Fatal("server's import of service not reported")
	}
}
