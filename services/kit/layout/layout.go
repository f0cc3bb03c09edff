// Package layout checks that a Kratos service's internal packages import
// each other in the services' one shape: server -> service -> biz <- data,
// with conf (and a service's own fault package) usable by all.
package layout

import (
	"fmt"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// Allowed lists, for each layer of internal/, the sibling layers it may
// import. A layer not listed (conf, fault) may import no sibling but
// conf.
var Allowed = map[string][]string{
	"server":  {"service", "conf", "fault"},
	"service": {"biz", "conf"},
	"biz":     {"conf", "fault"},
	"data":    {"biz", "conf", "fault"},
}

// Check lists the packages of dir/internal with `go list` and returns one
// line per import between layers that Allowed (plus extra, per layer)
// does not permit; none when the graph has the shape.
func Check(dir string, extra map[string][]string) ([]string, error) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./internal/...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("layout: go list in %s: %w", dir, err)
	}
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		pkg, prefix := layer(f[0])
		if pkg == "" {
			continue
		}
		ok := append(append([]string{"conf"}, Allowed[pkg]...), extra[pkg]...)
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, prefix) {
				continue
			}
			if to, _ := layer(imp); to != pkg && !slices.Contains(ok, to) {
				bad = append(bad, fmt.Sprintf("%s imports %s", pkg, to))
			}
		}
	}
	return bad, nil
}

// layer returns the layer of an import path of the form
// .../internal/<layer>[/...] and the prefix ".../internal/".
func layer(importPath string) (string, string) {
	i := strings.Index(importPath, "/internal/")
	if i < 0 {
		return "", ""
	}
	rest := importPath[i+len("/internal/"):]
	return strings.Split(rest, "/")[0], path.Clean(importPath[:i+len("/internal")]) + "/"
}

// Assert fails t with one error per import Check reports in dir.
func Assert(t testing.TB, dir string, extra map[string][]string) {
	t.Helper()
	bad, err := Check(dir, extra)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
}
