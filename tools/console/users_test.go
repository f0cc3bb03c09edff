package console

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

func bcryptOf(t *testing.T, pw string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

// argon2Of is what argon2 CLIs and libraries write for password pw.
func argon2Of(pw string) string {
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte(pw), salt, 1, 8*1024, 1, 32)
	return "$argon2id$v=19$m=8192,t=1,p=1$" + base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(key)
}

func TestParseUsers(t *testing.T) {
	bc, ar := bcryptOf(t, "alice-password"), argon2Of("bob-password")
	for _, tc := range []struct {
		name, file string
		want       map[string]Role
		err        string
	}{
		{"bcrypt and argon2id", "# users\n\nalice:admin:" + bc + "\n  bob:Viewer:" + ar + "  \n", map[string]Role{"alice": RoleAdmin, "bob": RoleViewer}, ""},
		{"empty", "# nobody yet\n", map[string]Role{}, ""},
		{"missing hash", "alice:admin\n", nil, "line 1: want name:role:hash"},
		{"unknown role", "alice:root:" + bc + "\n", nil, `line 1: unknown role "root"`},
		{"plain text password", "alice:admin:secret\n", nil, "line 1: user \"alice\": the hash must be bcrypt"},
		{"bad bcrypt", "alice:admin:$2a$xx$abc\n", nil, "bad bcrypt hash"},
		{"bad argon2", "alice:admin:$argon2id$v=19$m=1,t=0,p=1$c2FsdHNhbHQ$a2V5\n", nil, "bad argon2id parameters"},
		{"argon2i is not argon2id", "alice:admin:$argon2i$v=19$m=8192,t=1,p=1$c2FsdHNhbHQ$a2V5\n", nil, "must be bcrypt"},
		{"twice", "alice:admin:" + bc + "\nalice:viewer:" + bc + "\n", nil, `line 2: user "alice" given twice`},
		{"bad name", "al ice:admin:" + bc + "\n", nil, "only letters, digits"},
		{"empty name", ":admin:" + bc + "\n", nil, "1 to 64 bytes"},
		{"long name", strings.Repeat("a", 65) + ":admin:" + bc + "\n", nil, "1 to 64 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			us, err := ParseUsers("users", []byte(tc.file))
			if tc.err != "" {
				if !errors.Is(err, ErrUsersFile) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an ErrUsersFile containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(us) != len(tc.want) {
				t.Fatalf("users %v", us)
			}
			for n, r := range tc.want {
				if us[n].Role != r {
					t.Fatalf("%s: role %v, want %v", n, us[n].Role, r)
				}
			}
		})
	}
}

func TestCheckPassword(t *testing.T) {
	for _, h := range []string{bcryptOf(t, "right-password"), argon2Of("right-password")} {
		if !checkPassword(h, "right-password") {
			t.Errorf("%s: the right password refused", h[:10])
		}
		if checkPassword(h, "wrong-password") || checkPassword(h, "") {
			t.Errorf("%s: a wrong password accepted", h[:10])
		}
	}
}

func TestEditUsersAndReload(t *testing.T) {
	BcryptCost = bcrypt.MinCost
	path := filepath.Join(t.TempDir(), "users")
	add := func(name string, role Role, pw string) error {
		return EditUsers(path, func(us map[string]User) error {
			h, err := HashPassword(pw)
			if err != nil {
				return err
			}
			us[name] = User{Name: name, Role: role, Hash: h}
			return nil
		})
	}
	if err := add("alice", RoleOperator, "alice-password"); err != nil {
		t.Fatal(err)
	}
	if err := add("bob", RoleViewer, "short"); !errors.Is(err, ErrWeakPassword) {
		t.Fatalf("short password: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("users file mode: %v %v", st, err)
	}
	store, err := openUserStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok, err := store.verify("alice", "alice-password"); !ok || err != nil || u.Role != RoleOperator {
		t.Fatalf("alice: %+v %v %v", u, ok, err)
	}
	for _, c := range [][2]string{{"alice", "wrong"}, {"nobody", "alice-password"}, {"", ""}} {
		if _, ok, _ := store.verify(c[0], c[1]); ok {
			t.Fatalf("%q/%q accepted", c[0], c[1])
		}
	}
	// A new password is seen without a restart (the file is re-read when
	// it changes; make the change visible even on coarse mtimes).
	if err := add("alice", RoleAdmin, "new-alice-password"); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, time.Now().Add(time.Minute), time.Now().Add(time.Minute))
	if _, ok, _ := store.verify("alice", "alice-password"); ok {
		t.Fatal("the old password still works")
	}
	if u, ok, _ := store.verify("alice", "new-alice-password"); !ok || u.Role != RoleAdmin {
		t.Fatalf("new password: %+v %v", u, ok)
	}
	// A broken file keeps the last good users and says why.
	os.WriteFile(path, []byte("garbage\n"), 0o600)
	os.Chtimes(path, time.Now().Add(2*time.Minute), time.Now().Add(2*time.Minute))
	if _, ok, err := store.verify("alice", "new-alice-password"); !ok || !errors.Is(err, ErrUsersFile) {
		t.Fatalf("broken file: %v %v", ok, err)
	}
	if _, err := openUserStore(filepath.Join(t.TempDir(), "none")); !errors.Is(err, ErrUsersFile) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestRoleTable is the table: viewer reads, operator also resets
// offsets and resends dead letters, admin also decides half messages and
// reads the audit.
func TestRoleTable(t *testing.T) {
	want := map[Action][4]bool{ // none, viewer, operator, admin
		ActRead:        {false, true, true, true},
		ActResetOffset: {false, false, true, true},
		ActResendDLQ:   {false, false, true, true},
		ActHalfResume:  {false, false, false, true},
		ActHalfCommit:  {false, false, false, true},
		ActHalfRollbck: {false, false, false, true},
		ActReadAudit:   {false, false, false, true},
		"topic.delete": {false, false, false, false}, // not in the table: nobody
	}
	if len(roleTable) != len(want)-1 {
		t.Fatalf("the role table has %d actions, the test %d: test the new ones", len(roleTable), len(want)-1)
	}
	for a, w := range want {
		for r := RoleNone; r <= RoleAdmin; r++ {
			if got := r.Allowed(a); got != w[r] {
				t.Errorf("%s may %s: %v, want %v", r, a, got, w[r])
			}
		}
	}
	if Role(7).Allowed(ActRead) {
		t.Error("an unknown role may read")
	}
	for _, s := range []string{"viewer", "OPERATOR", "Admin"} {
		if _, err := ParseRole(s); err != nil {
			t.Error(err)
		}
	}
	for _, s := range []string{"", "none", "root"} {
		if _, err := ParseRole(s); err == nil {
			t.Errorf("role %q accepted", s)
		}
	}
}

func TestSessionTimeouts(t *testing.T) {
	now := time.Unix(1e9, 0)
	s := newSessions(30*time.Minute, 2*time.Hour, func() time.Time { return now })
	id := s.create(User{Name: "alice", Hash: "h"})
	if len(id) != 43 {
		t.Fatalf("session id %q", id)
	}
	for i := 0; i < 4; i++ { // used every 29 min: alive until the absolute timeout
		now = now.Add(29 * time.Minute)
		if _, ok := s.get(id); !ok {
			t.Fatalf("session ended after %d × 29 min", i+1)
		}
	}
	now = now.Add(5 * time.Minute) // 2 h 1 min after sign-in
	if _, ok := s.get(id); ok {
		t.Fatal("session outlived the absolute timeout")
	}
	id = s.create(User{Name: "alice"})
	now = now.Add(30 * time.Minute)
	if _, ok := s.get(id); ok {
		t.Fatal("session outlived the idle timeout")
	}
	id = s.create(User{Name: "alice"})
	s.delete(id)
	if _, ok := s.get(id); ok || len(s.m) != 0 {
		t.Fatalf("after sign-out: %v, %d sessions kept", ok, len(s.m))
	}
}

func TestLoginLimiter(t *testing.T) {
	now := time.Unix(1e9, 0)
	l := newLoginLimiter(3, 10*time.Minute)
	for i := 0; i < 3; i++ {
		if w := l.wait(now, "user:alice", "addr:10.0.0.1"); w != 0 {
			t.Fatalf("attempt %d waits %v", i+1, w)
		}
		l.fail(now, "user:alice", "addr:10.0.0.1")
		now = now.Add(time.Minute)
	}
	if w := l.wait(now, "user:alice", "addr:10.0.0.1"); w != 7*time.Minute {
		t.Fatalf("after 3 failures: wait %v, want 7m", w)
	}
	if w := l.wait(now, "user:bob", "addr:10.0.0.1"); w != 0 {
		t.Fatalf("another user from the address waits %v (the address allows 12)", w)
	}
	now = now.Add(7 * time.Minute)
	if w := l.wait(now, "user:alice"); w != 0 {
		t.Fatalf("after the window: wait %v", w)
	}
	// An address trying many names is limited at 4× the per-name limit.
	for i := 0; i < 12; i++ {
		l.fail(now, "user:u"+string(rune('a'+i)), "addr:10.0.0.2")
	}
	if w := l.wait(now, "user:new", "addr:10.0.0.2"); w == 0 {
		t.Fatal("a spraying address is not limited")
	}
	l.reset("user:alice")
	if _, ok := l.fails["user:alice"]; ok {
		t.Fatal("reset kept failures")
	}
}

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{"/groups/g?x=1": "/groups/g?x=1", "": "/cluster", "//evil.example/": "/cluster",
		"/\\evil.example": "/cluster", "https://evil.example/": "/cluster", "/a\r\nSet-Cookie: x": "/cluster"} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
