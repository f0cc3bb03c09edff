package ddl

import (
	"strings"
	"testing"
	"testing/fstest"
)

const pattern = "CREATE TABLE IF NOT EXISTS `t1` (\n  id BIGINT NOT NULL,\n  note TEXT NULL COMMENT 'a, b',\n  PRIMARY KEY (id)\n) ENGINE=InnoDB"

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string // "" = match
	}{
		{"same text", map[string]string{"m/000001_a.up.sql": pattern + ";"}, ""},
		{"other layout and comments", map[string]string{"m/000001_a.up.sql": `-- the pattern's table
CREATE TABLE IF NOT EXISTS t1 (
    id   BIGINT NOT NULL, -- key
    note TEXT   NULL COMMENT 'a, b',
    PRIMARY KEY ( id )
) ENGINE = InnoDB;
CREATE TABLE other (x INT);`}, ""},
		{"missing", map[string]string{"m/000001_a.up.sql": "CREATE TABLE other (x INT);"}, "t1: no migration creates it"},
		{"drifted", map[string]string{"m/000001_a.up.sql": strings.Replace(pattern, "BIGINT", "INT", 1) + ";"}, "t1 differs"},
		{"later migration wins", map[string]string{
			"m/000001_a.up.sql": strings.Replace(pattern, "BIGINT", "INT", 1) + ";",
			"m/000002_b.up.sql": "DROP TABLE t1;\n" + pattern + ";",
		}, ""},
		{"down files ignored", map[string]string{
			"m/000001_a.up.sql":   pattern + ";",
			"m/000001_a.down.sql": "CREATE TABLE t1 (id INT);",
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for n, s := range tt.files {
				fsys[n] = &fstest.MapFile{Data: []byte(s)}
			}
			got, err := Migrations(fsys, "m")
			if err != nil {
				t.Fatal(err)
			}
			err = Check(got, pattern)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	got := Normalize("CREATE  TABLE `x` (\n a INT ,\n b CHAR( 2 ) ) ENGINE = InnoDB ;")
	if want := "CREATE TABLE x(a INT,b CHAR(2))ENGINE=InnoDB"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
