package store

import (
	"testing"

	"github.com/tidemq/tide/pkg/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestTake against MariaDB: a selected row is read, no row is found
// false without an error, and a failing query is an error.
func TestTake(t *testing.T) {
	db, sqlDB, err := Open(testenv.MariaDB(t).DSN, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	for _, stmt := range []string{"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(8) NOT NULL)", "INSERT INTO t VALUES (1, 'one')"} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	var row struct{ V string }
	if found, err := Take(db.Table("t").Where("id = ?", 1), &row); !found || err != nil || row.V != "one" {
		t.Fatalf("id 1: found %v, err %v, row %+v; want the row", found, err, row)
	}
	if found, err := Take(db.Table("t").Where("id = ?", 2), &row); found || err != nil {
		t.Fatalf("id 2: found %v, err %v; want not found, no error", found, err)
	}
	if found, err := Take(db.Table("missing"), &row); found || err == nil {
		t.Fatalf("missing table: found %v, err %v; want an error", found, err)
	}
}
