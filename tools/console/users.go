package console

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Users file errors.
var (
	// ErrUsersFile: the users file could not be read or has a bad line.
	ErrUsersFile = errors.New("console: users file")
	// ErrUserExists: "user add" of a name already in the file.
	ErrUserExists = errors.New("console: user exists")
	// ErrNoUser: "user passwd" (or role, del) of a name not in the file.
	ErrNoUser = errors.New("console: no such user")
	// ErrWeakPassword: a password shorter than MinPasswordLen.
	ErrWeakPassword = errors.New("console: password too short")
)

// MinPasswordLen is the shortest password "user add" and "user passwd"
// accept; MaxPasswordLen the longest (bcrypt reads at most 72 bytes).
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
)

// BcryptCost is the cost of new password hashes (bcrypt's default, about
// 50-100 ms per sign-in on a server core). Tests lower it.
var BcryptCost = bcrypt.DefaultCost

// User is one entry of the users file. Hash is never rendered.
type User struct {
	Name string
	Role Role
	Hash string
}

// The users file holds one user per line, name, role and password hash
// separated by colons (an htpasswd with a role); '#' starts a comment:
//
//	# Tide console users (console user add|passwd|role|del edits this file)
//	alice:admin:$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy
//	bob:viewer:$argon2id$v=19$m=65536,t=3,p=2$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA
//
// Hashes are bcrypt ($2a$, $2b$, $2y$; what "console user" writes) or
// argon2id in the PHC string format. Names are 1-64 bytes of letters,
// digits and . _ @ -.

// ParseUsers reads a users file's content; name labels errors.
func ParseUsers(name string, data []byte) (map[string]User, error) {
	users := map[string]User{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, err := parseUserLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w %s line %d: %v", ErrUsersFile, name, n, err)
		}
		if _, dup := users[u.Name]; dup {
			return nil, fmt.Errorf("%w %s line %d: user %q given twice", ErrUsersFile, name, n, u.Name)
		}
		users[u.Name] = u
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrUsersFile, name, err)
	}
	return users, nil
}

func parseUserLine(line string) (User, error) {
	parts := strings.SplitN(line, ":", 3)
	if len(parts) != 3 {
		return User{}, errors.New("want name:role:hash")
	}
	if err := CheckUserName(parts[0]); err != nil {
		return User{}, err
	}
	role, err := ParseRole(parts[1])
	if err != nil {
		return User{}, err
	}
	if err := checkHash(parts[2]); err != nil {
		return User{}, fmt.Errorf("user %q: %v", parts[0], err)
	}
	return User{Name: parts[0], Role: role, Hash: parts[2]}, nil
}

// CheckUserName reports whether name can be a console user name.
func CheckUserName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("user name must be 1 to 64 bytes, got %d", len(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._@-", c)) {
			return fmt.Errorf("user name %q: only letters, digits and . _ @ - are allowed", name)
		}
	}
	return nil
}

func checkHash(h string) error {
	switch {
	case strings.HasPrefix(h, "$2a$"), strings.HasPrefix(h, "$2b$"), strings.HasPrefix(h, "$2y$"):
		if _, err := bcrypt.Cost([]byte(h)); err != nil {
			return fmt.Errorf("bad bcrypt hash: %v", err)
		}
		return nil
	case strings.HasPrefix(h, "$argon2id$"):
		_, err := parseArgon2(h)
		return err
	}
	return errors.New("the hash must be bcrypt ($2a$, $2b$, $2y$) or argon2id ($argon2id$)")
}

// HashPassword returns a bcrypt hash of password at BcryptCost, checking
// its length first.
func HashPassword(password string) (string, error) {
	if len(password) < MinPasswordLen {
		return "", fmt.Errorf("%w: at least %d characters", ErrWeakPassword, MinPasswordLen)
	}
	if len(password) > MaxPasswordLen {
		return "", fmt.Errorf("%w: at most %d bytes (bcrypt's limit)", ErrUsersFile, MaxPasswordLen)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), BcryptCost)
	if err != nil {
		return "", fmt.Errorf("console: hash password: %w", err)
	}
	return string(h), nil
}

// checkPassword reports whether password matches hash (bcrypt or
// argon2id), in time independent of where they differ.
func checkPassword(hash, password string) bool {
	if strings.HasPrefix(hash, "$argon2id$") {
		a, err := parseArgon2(hash)
		if err != nil {
			return false
		}
		got := argon2.IDKey([]byte(password), a.salt, a.time, a.memory, a.threads, uint32(len(a.key)))
		return subtle.ConstantTimeCompare(got, a.key) == 1
	}
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

type argon2Hash struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

// parseArgon2 reads "$argon2id$v=19$m=65536,t=3,p=2$<salt>$<key>" (salt
// and key unpadded base64).
func parseArgon2(h string) (argon2Hash, error) {
	var a argon2Hash
	parts := strings.Split(h, "$")
	if len(parts) != 6 || parts[2] != "v=19" {
		return a, errors.New("bad argon2id hash: want $argon2id$v=19$m=..,t=..,p=..$salt$key")
	}
	var p uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &a.memory, &a.time, &p); err != nil || p == 0 || p > 255 || a.time == 0 {
		return a, fmt.Errorf("bad argon2id parameters %q", parts[3])
	}
	a.threads = uint8(p)
	var err error
	if a.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(a.salt) < 8 {
		return a, errors.New("bad argon2id salt")
	}
	if a.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(a.key) < 16 {
		return a, errors.New("bad argon2id key")
	}
	return a, nil
}

// userStore is the users file as the server sees it: re-read when its
// modification time or size changes, so "console user passwd" takes
// effect without a restart. Safe for concurrent use.
type userStore struct {
	path string

	mu    sync.Mutex
	users map[string]User
	mod   time.Time
	size  int64
	dummy string // hash checked for unknown names (same cost as real ones)
}

func openUserStore(path string) (*userStore, error) {
	s := &userStore{path: path}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// reload re-reads the file if it changed. A file that became unreadable
// or invalid keeps the last good users (and the error is returned).
func (s *userStore) reload() error {
	st, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users != nil && st.ModTime().Equal(s.mod) && st.Size() == s.size {
		return nil
	}
	data, err := os.ReadFile(s.path)
	if err == nil {
		var users map[string]User
		if users, err = ParseUsers(s.path, data); err == nil {
			s.users, s.mod, s.size = users, st.ModTime(), st.Size()
			s.dummy = ""
			for _, u := range users {
				if strings.HasPrefix(u.Hash, "$2") {
					s.dummy = u.Hash
					break
				}
			}
		}
	}
	if err != nil && !errors.Is(err, ErrUsersFile) {
		err = fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	return err
}

// lookup returns the user named name, if listed.
func (s *userStore) lookup(name string) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[name]
	return u, ok
}

// verify checks name and password against the file (re-read first if it
// changed); unknown names cost a hash comparison too, so timing does not
// tell which names exist. A file that became unreadable or invalid keeps
// the last good users; its error is returned for the log.
func (s *userStore) verify(name, password string) (User, bool, error) {
	rerr := s.reload()
	s.mu.Lock()
	u, ok := s.users[name]
	dummy := s.dummy
	s.mu.Unlock()
	if !ok {
		if dummy != "" {
			checkPassword(dummy, password)
		}
		return User{}, false, rerr
	}
	return u, checkPassword(u.Hash, password), rerr
}

// EditUsers applies edit to the users of the file at path (missing: no
// users yet) and writes the result back atomically (a temporary file
// renamed over it, mode 0600). Lines are written sorted by name, with a
// header comment.
func EditUsers(path string, edit func(users map[string]User) error) error {
	users := map[string]User{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if users, err = ParseUsers(path, data); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	if err := edit(users); err != nil {
		return err
	}
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	b.WriteString("# Tide console users: name:role:hash (roles viewer, operator, admin).\n# Edit with `console user add|passwd|role|del -users " +
		strconv.Quote(filepath.Base(path)) + "`.\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s:%s:%s\n", n, users[n].Role, users[n].Hash)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".users-*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%w: %v", ErrUsersFile, err)
	}
	return nil
}
