package console

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// session is one signed-in browser. Its id lives only in the cookie; the
// store keeps the id's SHA-256, so the map never holds a usable secret.
type session struct {
	user    string
	hash    string // the user's password hash at sign-in: a new password ends the session
	created time.Time
	seen    time.Time
}

// sessions are the signed-in sessions, in memory (a restart signs
// everyone out). Safe for concurrent use.
type sessions struct {
	idle, max time.Duration
	now       func() time.Time

	mu sync.Mutex
	m  map[[32]byte]*session
}

func newSessions(idle, max time.Duration, now func() time.Time) *sessions {
	return &sessions{idle: idle, max: max, now: now, m: map[[32]byte]*session{}}
}

// create starts a session for u and returns its id (256 random bits,
// base64url) for the cookie. Expired sessions are swept here.
func (s *sessions) create(u User) string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, x := range s.m {
		if s.expired(x, now) {
			delete(s.m, k)
		}
	}
	s.m[sha256.Sum256([]byte(id))] = &session{user: u.Name, hash: u.Hash, created: now, seen: now}
	return id
}

// get returns the live session of id and marks it used; an expired one is
// removed and reported as absent.
func (s *sessions) get(id string) (session, bool) {
	k := sha256.Sum256([]byte(id))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.m[k]
	if !ok {
		return session{}, false
	}
	if s.expired(x, now) {
		delete(s.m, k)
		return session{}, false
	}
	x.seen = now
	return *x, true
}

func (s *sessions) expired(x *session, now time.Time) bool {
	return now.Sub(x.seen) >= s.idle || now.Sub(x.created) >= s.max
}

// delete ends the session of id (sign-out).
func (s *sessions) delete(id string) {
	s.mu.Lock()
	delete(s.m, sha256.Sum256([]byte(id)))
	s.mu.Unlock()
}

// cookieName is the session cookie's name: with Secure it takes the
// __Host- prefix, which browsers only accept from HTTPS, for path / and
// without a Domain (no subdomain can set or read it).
func (s *Server) cookieName() string {
	if s.secure {
		return "__Host-tide_session"
	}
	return "tide_session"
}

// sessionCookie is the cookie carrying id: HttpOnly (no script reads it),
// SameSite=Strict (no other site's page sends it), Secure under TLS.
// maxAge < 0 deletes it.
func (s *Server) sessionCookie(id string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: s.cookieName(), Value: id, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.secure}
}

// loginLimiter counts failed sign-ins per user name and per client
// address in a sliding window; over the limit, sign-ins of that name (or
// from that address) are refused until the oldest failure leaves the
// window. Safe for concurrent use.
type loginLimiter struct {
	max    int // failures per name in the window; an address gets 4×
	window time.Duration

	mu    sync.Mutex
	fails map[string][]time.Time
}

func newLoginLimiter(max int, window time.Duration) *loginLimiter {
	return &loginLimiter{max: max, window: window, fails: map[string][]time.Time{}}
}

func (l *loginLimiter) limit(key string) int {
	if key[0] == 'a' { // "addr:": several people may share one address
		return 4 * l.max
	}
	return l.max
}

// wait reports how long the sign-in keyed by keys ("user:NAME",
// "addr:IP") must wait; 0 means it may try.
func (l *loginLimiter) wait(now time.Time, keys ...string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var longest time.Duration
	for _, k := range keys {
		f := l.recent(k, now)
		if n := l.limit(k); len(f) >= n {
			if w := f[len(f)-n].Add(l.window).Sub(now); w > longest {
				longest = w
			}
		}
	}
	return longest
}

// fail records a failed sign-in under keys.
func (l *loginLimiter) fail(now time.Time, keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fails) > 10000 { // bound memory under a spray of names
		for k := range l.fails {
			if len(l.recent(k, now)) == 0 {
				delete(l.fails, k)
			}
		}
	}
	for _, k := range keys {
		l.fails[k] = append(l.recent(k, now), now)
	}
}

// reset forgets the failures of key (a successful sign-in of that user).
func (l *loginLimiter) reset(key string) {
	l.mu.Lock()
	delete(l.fails, key)
	l.mu.Unlock()
}

// recent drops key's failures older than the window; l.mu held.
func (l *loginLimiter) recent(key string, now time.Time) []time.Time {
	f := l.fails[key]
	i := 0
	for i < len(f) && now.Sub(f[i]) >= l.window {
		i++
	}
	f = f[i:]
	if len(f) == 0 {
		delete(l.fails, key)
		return nil
	}
	l.fails[key] = f
	return f
}
