package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"golang.org/x/term"

	"github.com/tidemq/tide/tools/console"
)

const userUsage = `usage: console user COMMAND [-users FILE] ...

  add    [-role viewer|operator|admin] NAME   add a user (password from the terminal or one stdin line)
  passwd NAME                                 set a user's password (ends their sessions)
  role   NAME viewer|operator|admin           change a user's role
  del    NAME                                 remove a user
  list                                        names and roles (never hashes)

-users defaults to $CONSOLE_USERS_FILE. Flags go before the name.`

// userCmd runs "console user ...": it edits the users file. Passwords are
// read without echo from a terminal (twice), else as the first line of
// stdin, so scripts can pipe them: printf '%s\n' "$PW" | console user add -role admin alice
func userCmd(args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, userUsage)
		return errors.New("console user: a command is required")
	}
	cmd := args[0]
	fs := flag.NewFlagSet("console user "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, userUsage) }
	file := fs.String("users", getenv("CONSOLE_USERS_FILE"), "users `file` ($CONSOLE_USERS_FILE)")
	roleName := "viewer"
	if cmd == "add" {
		fs.StringVar(&roleName, "role", "viewer", "the user's `role`: viewer, operator or admin")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("console user: no users file (-users or CONSOLE_USERS_FILE)")
	}
	want := map[string]int{"add": 1, "passwd": 1, "role": 2, "del": 1, "list": 0}
	n, ok := want[cmd]
	if !ok {
		fmt.Fprintln(stderr, userUsage)
		return fmt.Errorf("console user: unknown command %q", cmd)
	}
	if fs.NArg() != n {
		return fmt.Errorf("console user %s: want %d argument(s), got %d (flags go before the name)", cmd, n, fs.NArg())
	}
	if cmd == "list" {
		return listUsers(*file, stdout)
	}
	name := fs.Arg(0)
	if err := console.CheckUserName(name); err != nil {
		return fmt.Errorf("console user %s: %w", cmd, err)
	}
	if cmd == "role" {
		roleName = fs.Arg(1)
	}
	role, err := console.ParseRole(roleName)
	if err != nil {
		return fmt.Errorf("console user %s: %w", cmd, err)
	}
	var hash string
	if cmd == "add" || cmd == "passwd" {
		pw, err := readPassword(name, stdin, stderr)
		if err != nil {
			return err
		}
		if hash, err = console.HashPassword(pw); err != nil {
			return err
		}
	}
	err = console.EditUsers(*file, func(users map[string]console.User) error {
		u, exists := users[name]
		switch {
		case cmd == "add" && exists:
			return fmt.Errorf("%w: %s (use passwd or role)", console.ErrUserExists, name)
		case cmd != "add" && !exists:
			return fmt.Errorf("%w: %s", console.ErrNoUser, name)
		}
		switch cmd {
		case "add":
			users[name] = console.User{Name: name, Role: role, Hash: hash}
		case "passwd":
			u.Hash = hash
			users[name] = u
		case "role":
			u.Role = role
			users[name] = u
		case "del":
			delete(users, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "console user %s %s: done (%s)\n", cmd, name, *file)
	return nil
}

func listUsers(file string, stdout io.Writer) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%w: %v", console.ErrUsersFile, err)
	}
	users, err := console.ParseUsers(file, data)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stdout, "%s\t%s\n", n, users[n].Role)
	}
	return nil
}

// readPassword reads a new password: twice without echo from a terminal,
// else the first line of stdin.
func readPassword(name string, stdin io.Reader, stderr io.Writer) (string, error) {
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(stderr, "New password for %s: ", name)
		a, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("console user: read password: %w", err)
		}
		fmt.Fprint(stderr, "Again: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr)
		if err != nil {
			return "", fmt.Errorf("console user: read password: %w", err)
		}
		if string(a) != string(b) {
			return "", errors.New("console user: the passwords differ")
		}
		return string(a), nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", errors.New("console user: no password on stdin (give one line)")
	}
	return strings.TrimRight(line, "\r\n"), nil
}
