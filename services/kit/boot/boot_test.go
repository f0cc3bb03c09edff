package boot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func TestLoad(t *testing.T) {
	dir := writeConfig(t, "svc:\n  endpoint: ${KIT_BOOT_ENDPOINT:}\n  admin: ${KIT_BOOT_ADMIN:false}\n  name: fixed\n")
	tests := []struct {
		name     string
		env      map[string]string
		endpoint string
		admin    bool
	}{
		{"defaults", nil, "", false},
		{"environment", map[string]string{"KIT_BOOT_ENDPOINT": "collector:4318", "KIT_BOOT_ADMIN": "true"}, "collector:4318", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"KIT_BOOT_ENDPOINT", "KIT_BOOT_ADMIN"} {
				t.Setenv(k, tt.env[k])
				if tt.env[k] == "" {
					os.Unsetenv(k)
				}
			}
			var got structpb.Struct
			if err := Load(dir, &got); err != nil {
				t.Fatal(err)
			}
			svc := got.GetFields()["svc"].GetStructValue().GetFields()
			if svc["endpoint"].GetStringValue() != tt.endpoint || svc["name"].GetStringValue() != "fixed" {
				t.Errorf("svc = %v", svc)
			}
			// Resolved to its actual type: a bool, not the string "true".
			if b, ok := svc["admin"].GetKind().(*structpb.Value_BoolValue); !ok || b.BoolValue != tt.admin {
				t.Errorf("admin = %v, want bool %v", svc["admin"], tt.admin)
			}
		})
	}
	if err := Load(filepath.Join(dir, "missing.yaml"), &structpb.Struct{}); err == nil || !strings.HasPrefix(err.Error(), "load config:") {
		t.Fatalf("missing file: %v", err)
	}
}

// writeConfig writes yaml as config.yaml into a new directory and
// returns the directory.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInstanceName(t *testing.T) {
	t.Setenv(InstanceEnv, "inventory-0")
	if got := InstanceName(); got != "inventory-0" {
		t.Fatalf("InstanceName() = %q with %s=inventory-0", got, InstanceEnv)
	}
	os.Unsetenv(InstanceEnv)
	if got := InstanceName(); got != "" {
		t.Fatalf("InstanceName() = %q with %s unset, want empty", got, InstanceEnv)
	}
}
