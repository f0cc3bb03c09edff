package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/tidemq/tide/tools/console"
)

// TestUserCommand: add, passwd, role, del and list edit the users file;
// mistakes are refused with a reason and leave it unchanged.
func TestUserCommand(t *testing.T) {
	console.BcryptCost = bcrypt.MinCost
	users := filepath.Join(t.TempDir(), "users")
	env := func(k string) string {
		if k == "CONSOLE_USERS_FILE" {
			return users
		}
		return ""
	}
	user := func(stdin string, args ...string) (string, error) {
		var out strings.Builder
		err := userCmd(args, env, strings.NewReader(stdin), &out, io.Discard)
		return out.String(), err
	}
	steps := []struct {
		stdin string
		args  []string
		err   string
	}{
		{"alice-password\n", []string{"add", "-role", "admin", "alice"}, ""},
		{"bob-password", []string{"add", "bob"}, ""}, // no newline at the end of stdin: fine; role viewer
		{"alice-password\n", []string{"add", "alice"}, "user exists"},
		{"short\n", []string{"add", "carol"}, "password too short"},
		{"", []string{"add", "carol"}, "no password on stdin"},
		{"carol-password\n", []string{"add", "-role", "root", "carol"}, "unknown role"},
		{"carol-password\n", []string{"add", "car ol"}, "only letters"},
		{"carol-password\n", []string{"add", "carol", "-role", "admin"}, "flags go before the name"},
		{"new-bob-password\n", []string{"passwd", "bob"}, ""},
		{"x-password\n", []string{"passwd", "nobody"}, "no such user"},
		{"", []string{"role", "bob", "operator"}, ""},
		{"", []string{"del", "alice"}, ""},
		{"", []string{"del", "alice"}, "no such user"},
		{"", []string{"frobnicate"}, "unknown command"},
		{"", nil, "a command is required"},
	}
	for _, st := range steps {
		if _, err := user(st.stdin, st.args...); (err == nil) != (st.err == "") || (err != nil && !strings.Contains(err.Error(), st.err)) {
			t.Fatalf("user %v: %v, want %q", st.args, err, st.err)
		}
	}
	out, err := user("", "list")
	if err != nil || out != "bob\toperator\n" {
		t.Fatalf("list: %q %v", out, err)
	}
	data, _ := os.ReadFile(users)
	us, err := console.ParseUsers(users, data)
	if err != nil || bcrypt.CompareHashAndPassword([]byte(us["bob"].Hash), []byte("new-bob-password")) != nil {
		t.Fatalf("bob's new password not in the file: %v %+v", err, us)
	}
	if strings.Contains(string(data), "new-bob-password") {
		t.Fatal("the file holds a password in clear")
	}
	if err := userCmd([]string{"list"}, func(string) string { return "" }, strings.NewReader(""), io.Discard, io.Discard); err == nil ||
		errors.Is(err, console.ErrUsersFile) {
		t.Fatalf("no users file named: %v", err)
	}
}
