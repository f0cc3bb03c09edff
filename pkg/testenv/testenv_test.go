package testenv

import (
	"database/sql"
	"net"
	"testing"
)

func TestMariaDB(t *testing.T) {
	a, b := MariaDB(t), MariaDB(t)
	if a.Name == b.Name {
		t.Fatal("two tests share a database")
	}
	db, err := sql.Open("mysql", a.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE x (id BIGINT PRIMARY KEY); INSERT INTO x VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM x").Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
}

func TestRedisStopStart(t *testing.T) {
	r := Redis(t)
	ping := func() error {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 7)
		_, err = c.Read(buf)
		if string(buf) != "+PONG\r\n" {
			t.Fatalf("reply %q", buf)
		}
		return err
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if err := ping(); err == nil {
		t.Fatal("Redis still answers after Stop")
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
}
