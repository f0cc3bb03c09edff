package mqclient_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// heavy are the module path prefixes a user of the plain client must not
// get: the patterns' dependencies (gorm, the MySQL driver, go-redis,
// Kratos) and OpenTelemetry. The patterns live in their own modules
// (pkg/mqclient/txmsg, idempotent, ordered, delay, kratosmq, tracing).
var heavy = []string{
	"gorm.io/",
	"github.com/go-sql-driver/mysql",
	"github.com/redis/go-redis",
	"github.com/go-kratos/",
	"go.opentelemetry.io/",
}

func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(p); err != nil {
		t.Skipf("SKIPPED: no go tool in PATH or GOROOT (%v)", err)
	}
	return p
}

func goOutput(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(goTool(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// TestLeanClientDeps keeps the client module lean: the root package
// depends on the standard library and pkg/remoting only, no package of the
// module (tests aside) pulls a heavy dependency, and go.mod requires none.
func TestLeanClientDeps(t *testing.T) {
	const self = "github.com/tidemq/tide/pkg/mqclient"
	out := goOutput(t, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", self)
	for _, p := range strings.Fields(string(out)) {
		if p != self && !strings.HasPrefix(p, "github.com/tidemq/tide/pkg/remoting") {
			t.Errorf("%s depends on %s; the plain client may depend on pkg/remoting only", self, p)
		}
	}

	out = goOutput(t, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./...")
	for _, p := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if strings.HasPrefix(p, h) {
				t.Errorf("a package of the client module depends on %s; move it to its own module", p)
			}
		}
	}

	var mod struct {
		Require []struct{ Path string }
	}
	if err := json.Unmarshal(goOutput(t, "mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	for _, r := range mod.Require {
		for _, h := range heavy {
			if strings.HasPrefix(r.Path, h) {
				t.Errorf("go.mod requires %s; users of the client would get it in their module graph", r.Path)
			}
		}
	}
}
