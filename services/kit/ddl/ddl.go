// Package ddl compares the CREATE TABLE statements of SQL migrations with
// the schema strings the pkg/mqclient pattern packages export
// (txmsg.Schema, idempotent.Schema, ordered.Schema, reconcile.Schema).
// The services apply the patterns' own migrations (kit/migrate.Pattern);
// CheckApplied fails when a service keeps a pattern's table without them
// or redefines it in its own migrations.
package ddl

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/tidemq/tide/services/kit/migrate"
)

var (
	lineComment  = regexp.MustCompile(`(?m)--[^\n]*$`)
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	space        = regexp.MustCompile(`\s+`)
	// Space next to punctuation carries no meaning in DDL.
	punctSpace  = regexp.MustCompile(` ?([(),=]) ?`)
	createTable = regexp.MustCompile("(?i)^CREATE TABLE (?:IF NOT EXISTS )?([A-Za-z0-9_]+) ?")
)

// Normalize returns stmt without comments, backquotes and a trailing
// semicolon, with white space folded to single spaces and none next to
// parentheses, commas and equals signs. Quoted strings (COMMENT '...') are
// kept as they are apart from white space folding, so they must not hold
// "--".
func Normalize(stmt string) string {
	s := lineComment.ReplaceAllString(stmt, "")
	s = blockComment.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "`", "")
	s = strings.TrimSpace(space.ReplaceAllString(s, " "))
	s = punctSpace.ReplaceAllString(s, "$1")
	return strings.TrimSpace(strings.TrimSuffix(s, ";"))
}

// Tables returns the normalised CREATE TABLE statements of script (SQL
// statements separated by ";"), by table name, without IF NOT EXISTS;
// other statements are ignored. A table created twice keeps its last definition.
func Tables(script string) map[string]string {
	out := map[string]string{}
	for _, stmt := range strings.Split(lineComment.ReplaceAllString(script, ""), ";") {
		n := Normalize(stmt)
		if m := createTable.FindStringSubmatch(n); m != nil {
			// IF NOT EXISTS is how a statement runs, not what it defines.
			out[m[1]] = "CREATE TABLE " + m[1] + " " + strings.TrimPrefix(n, m[0])
		}
	}
	return out
}

// Migrations returns the tables the *.up.sql files of dir in fsys create,
// read in name order (golang-migrate's version order for zero-padded
// versions), the later definition of a table winning.
func Migrations(fsys fs.FS, dir string) (map[string]string, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.up.sql"))
	if err != nil {
		return nil, fmt.Errorf("ddl: %w", err)
	}
	slices.Sort(names)
	out := map[string]string{}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("ddl: %w", err)
		}
		for t, def := range Tables(string(b)) {
			out[t] = def
		}
	}
	return out, nil
}

// Check reports, as one error, every table defined in the schemas that
// got lacks or defines differently (after Normalize); nil when they all
// match. Tables of got that no schema defines are not checked. A pattern
// schema change must reach got through a new migration that creates the
// table in its new form (see Migrations): Check does not apply ALTER
// TABLE statements.
func Check(got map[string]string, schemas ...string) error {
	var problems []string
	for _, schema := range schemas {
		want := Tables(schema)
		names := make([]string, 0, len(want))
		for n := range want {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			g, ok := got[n]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("table %s: no migration creates it", n))
			case g != want[n]:
				problems = append(problems, fmt.Sprintf("table %s differs from the pattern's schema:\n  migration: %s\n  pattern:   %s", n, g, want[n]))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("ddl: migrations drifted from the pattern schemas (add a migration):\n%s", strings.Join(problems, "\n"))
	}
	return nil
}

// CheckFS is Check(Migrations(fsys, dir), schemas...): the test a service
// runs over its embedded migrations.
func CheckFS(fsys fs.FS, dir string, schemas ...string) error {
	got, err := Migrations(fsys, dir)
	if err != nil {
		return err
	}
	return Check(got, schemas...)
}

// CheckApplied is Check over what migrate.Schema.Up applies: the tables
// the patterns' migrations create, in order, then those of the service's
// own migrations (a later definition winning). It fails when a service
// keeps a pattern's table without applying the pattern's migrations, or
// redefines it.
func CheckApplied(s migrate.Schema, schemas ...string) error {
	got := map[string]string{}
	for _, p := range s.Patterns {
		tables, err := Migrations(p.FS, "migrations")
		if err != nil {
			return err
		}
		maps.Copy(got, tables)
	}
	own, err := Migrations(s.Own, "migrations")
	if err != nil {
		return err
	}
	maps.Copy(got, own)
	return Check(got, schemas...)
}
