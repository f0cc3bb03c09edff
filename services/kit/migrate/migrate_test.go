package migrate

import (
	"database/sql"
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tidemq/tide/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestUp against MariaDB: the migrations are applied once, in order,
// with several statements per file; a second Up changes nothing; a
// broken migration is an error naming the failure, and the versions
// before it stay applied.
func TestUp(t *testing.T) {
	db := testenv.MariaDB(t)
	fsys := fstest.MapFS{
		"m/000001_schema.up.sql": {Data: []byte("CREATE TABLE a (id INT PRIMARY KEY);\nCREATE TABLE b (id INT PRIMARY KEY);")},
		"m/000002_seed.up.sql":   {Data: []byte("INSERT INTO a VALUES (1), (2);")},
	}
	for i := range 2 {
		if err := Up(db.DSN, fsys, "m"); err != nil {
			t.Fatalf("Up #%d: %v", i+1, err)
		}
	}
	conn, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n, version int
	if err := conn.QueryRow("SELECT COUNT(*) FROM a").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows in a: %d (%v), want 2 (the seed applied once)", n, err)
	}
	fsys["m/000003_broken.up.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE c (id NOPE);")}
	if err := Up(db.DSN, fsys, "m"); err == nil || !strings.HasPrefix(err.Error(), "migrations: ") {
		t.Fatalf("broken migration: %v, want a migrations error", err)
	}
	if err := conn.QueryRow("SELECT version FROM schema_migrations").Scan(&version); err != nil || version != 3 {
		t.Fatalf("schema version %d (%v), want 3 (dirty: the failed one is recorded)", version, err)
	}
	if err := Up("not a dsn", fsys, "m"); err == nil {
		t.Fatal("bad DSN accepted")
	}
}

// TestUpPatterns: a pattern's migrations run before the service's, in a
// version table of their own; a database whose pattern table an older
// service migration already created takes it as it is (IF NOT EXISTS)
// and records the pattern's version; a bad pattern name is refused.
func TestUpPatterns(t *testing.T) {
	db := testenv.MariaDB(t)
	conn, err := sql.Open("mysql", db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// What an older service migration left: the pattern's table, made by a copy.
	if _, err := conn.Exec("CREATE TABLE p (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	pat := Pattern{Name: "lib", FS: fstest.MapFS{
		"migrations/000001_p.up.sql": {Data: []byte("CREATE TABLE IF NOT EXISTS p (id INT PRIMARY KEY);\nCREATE TABLE IF NOT EXISTS q (id INT PRIMARY KEY);")},
	}}
	svc := fstest.MapFS{"m/000001_s.up.sql": {Data: []byte("INSERT INTO q VALUES (7);")}} // needs the pattern's table
	for i := range 2 {
		if err := Up(db.DSN, svc, "m", pat); err != nil {
			t.Fatalf("Up #%d: %v", i+1, err)
		}
	}
	for table, want := range map[string]int{"schema_migrations_lib": 1, "schema_migrations": 1} {
		var version int
		if err := conn.QueryRow("SELECT version FROM " + table).Scan(&version); err != nil || version != want {
			t.Fatalf("%s: version %d (%v), want %d", table, version, err, want)
		}
	}
	var n int
	if err := conn.QueryRow("SELECT COUNT(*) FROM q").Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows in q: %d (%v), want 1", n, err)
	}
	if err := Up(db.DSN, svc, "m", Pattern{Name: "Bad-Name", FS: pat.FS}); !errors.Is(err, ErrPatternName) {
		t.Fatalf("bad pattern name: %v, want ErrPatternName", err)
	}
}
