package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"
)

// AuthOptions configure who may use the console. Sign-in is always on:
// give a users file, a trusted proxy header, or both.
type AuthOptions struct {
	// UsersFile is the users file (see ParseUsers; `console user add`
	// writes it). It is re-read when it changes.
	UsersFile string
	// ProxyHeader, if set, names a request header (X-Forwarded-User,
	// X-Auth-Request-User, Remote-User...) that carries the user name
	// when an authenticating reverse proxy (oauth2-proxy, Authelia, an
	// SSO gateway) fronts the console. It is believed only from
	// TrustedProxies; from anyone else it is ignored (and logged).
	ProxyHeader string
	// ProxyRoleHeader optionally names a header carrying the user's role
	// (viewer, operator, admin) from the proxy. Without it (or when the
	// proxy omits it) a user listed in UsersFile gets the role listed
	// there, anyone else ProxyDefaultRole.
	ProxyRoleHeader string
	// ProxyDefaultRole is the role of proxied users found nowhere else.
	// Default RoleViewer.
	ProxyDefaultRole Role
	// TrustedProxies are the addresses (CIDR prefixes) whose ProxyHeader
	// is believed. Required with ProxyHeader.
	TrustedProxies []netip.Prefix
	// IdleTimeout ends a session unused for this long. Default 30 min.
	IdleTimeout time.Duration
	// MaxSession ends any session this long after sign-in. Default 12 h.
	MaxSession time.Duration
	// LoginAttempts is how many failed sign-ins of one user name are
	// allowed per LoginWindow (one client address gets four times as
	// many); more are refused with 429 until the window moves on.
	// Default 5 per 15 min.
	LoginAttempts int
	LoginWindow   time.Duration
	// SecureCookies marks the session cookie Secure even when the console
	// serves plain HTTP (TLS ends at a proxy in front of it). Serving TLS
	// itself (Options.CertFile) always does.
	SecureCookies bool
}

func (a *AuthOptions) setDefaults() {
	if a.ProxyDefaultRole == RoleNone {
		a.ProxyDefaultRole = RoleViewer
	}
	if a.IdleTimeout == 0 {
		a.IdleTimeout = 30 * time.Minute
	}
	if a.MaxSession == 0 {
		a.MaxSession = 12 * time.Hour
	}
	if a.LoginAttempts == 0 {
		a.LoginAttempts = 5
	}
	if a.LoginWindow == 0 {
		a.LoginWindow = 15 * time.Minute
	}
}

// Validate reports the first invalid field, wrapping ErrInvalidOptions.
func (a AuthOptions) Validate() error {
	switch {
	case a.UsersFile == "" && a.ProxyHeader == "":
		return fmt.Errorf("%w: sign-in needs a users file (-users, made with `console user add`) or a trusted proxy header (-auth-proxy-header)", ErrInvalidOptions)
	case a.ProxyHeader != "" && len(a.TrustedProxies) == 0:
		return fmt.Errorf("%w: a proxy header needs the proxies' addresses (-auth-proxy-trusted CIDR,...)", ErrInvalidOptions)
	case a.ProxyHeader == "" && (a.ProxyRoleHeader != "" || len(a.TrustedProxies) > 0):
		return fmt.Errorf("%w: a proxy role header or trusted proxies need a proxy user header", ErrInvalidOptions)
	case a.ProxyDefaultRole < RoleNone || a.ProxyDefaultRole > RoleAdmin:
		return fmt.Errorf("%w: proxy default role %d", ErrInvalidOptions, a.ProxyDefaultRole)
	case a.IdleTimeout < 0 || a.MaxSession < 0 || a.LoginWindow < 0 || a.LoginAttempts < 0:
		return fmt.Errorf("%w: session timeouts and login limits must be positive", ErrInvalidOptions)
	case a.IdleTimeout > 0 && a.MaxSession > 0 && a.MaxSession < a.IdleTimeout:
		return fmt.Errorf("%w: the absolute session timeout (%v) is shorter than the idle one (%v)", ErrInvalidOptions, a.MaxSession, a.IdleTimeout)
	}
	for _, h := range []string{a.ProxyHeader, a.ProxyRoleHeader} {
		if h != "" && !validHeaderName(h) {
			return fmt.Errorf("%w: header name %q", ErrInvalidOptions, h)
		}
	}
	return nil
}

func validHeaderName(h string) bool {
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Identity is who makes a request: a signed-in user or one a trusted
// proxy named.
type Identity struct {
	User string `json:"user"`
	Role Role   `json:"role"`
	// Via is "password" (a session cookie) or "proxy".
	Via string `json:"via"`
}

// Can reports whether the identity may do action (the role table).
func (i *Identity) Can(action string) bool { return i != nil && i.Role.Allowed(Action(action)) }

type identityKey struct{}

// identityOf returns the request's identity (nil on public paths).
func identityOf(r *http.Request) *Identity {
	id, _ := r.Context().Value(identityKey{}).(*Identity)
	return id
}

// publicPath reports paths served without sign-in.
func publicPath(p string) bool {
	return p == "/healthz" || p == "/readyz" || p == "/login" || p == "/logout" || strings.HasPrefix(p, "/static/")
}

// authenticate puts the request's identity in its context or, without
// one, answers: a page GET is sent to /login, anything else gets 401.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		if publicPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store") // no page outlives its session in a cache
		id, why := s.identify(r)
		if id == nil {
			s.unauthenticated(w, r, why)
			return
		}
		if !id.Role.Allowed(ActRead) { // every page takes the read action (the role table's first row)
			http.Error(w, fmt.Sprintf("forbidden: %s (%s) may not read", id.User, id.Role), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, id)))
	})
}

// identify finds the request's identity: the proxy's header (from a
// trusted address) or the session cookie. why says what was missing.
func (s *Server) identify(r *http.Request) (*Identity, string) {
	a := s.opts.Auth
	if a.ProxyHeader != "" {
		if name := r.Header.Get(a.ProxyHeader); name != "" {
			if !s.trustedProxy(r.RemoteAddr) {
				s.log.Warn("console: proxy identity header from an untrusted address ignored", "header", a.ProxyHeader,
					"remote", r.RemoteAddr, "path", r.URL.Path)
			} else {
				return s.proxyIdentity(r, name)
			}
		}
	}
	if s.users == nil {
		return nil, "no identity from the authenticating proxy"
	}
	c, err := r.Cookie(s.cookieName())
	if err != nil {
		return nil, "sign in first"
	}
	sess, ok := s.sessions.get(c.Value)
	if !ok {
		return nil, whyEnded
	}
	_ = s.users.reload()
	u, ok := s.users.lookup(sess.user)
	if !ok || u.Hash != sess.hash {
		s.sessions.delete(c.Value)
		return nil, "your account changed: sign in again"
	}
	return &Identity{User: u.Name, Role: u.Role, Via: "password"}, ""
}

func (s *Server) proxyIdentity(r *http.Request, name string) (*Identity, string) {
	a := s.opts.Auth
	if err := CheckUserName(name); err != nil {
		return nil, "the proxy sent a bad user name: " + err.Error()
	}
	if a.ProxyRoleHeader != "" {
		if rs := r.Header.Get(a.ProxyRoleHeader); rs != "" {
			role, err := ParseRole(rs)
			if err != nil {
				return nil, "the proxy sent a bad role: " + err.Error()
			}
			return &Identity{User: name, Role: role, Via: "proxy"}, ""
		}
	}
	role := a.ProxyDefaultRole
	if s.users != nil {
		_ = s.users.reload()
		if u, ok := s.users.lookup(name); ok {
			role = u.Role
		}
	}
	return &Identity{User: name, Role: role, Via: "proxy"}, ""
}

func (s *Server) trustedProxy(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range s.opts.Auth.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

const whyEnded = "your session has ended: sign in again"

// unauthenticated answers a request without identity.
func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, why string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"error": "unauthorized: " + why})
		return
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		to := "/login?next=" + url.QueryEscape(r.URL.RequestURI())
		if why == whyEnded {
			to += "&ended=1"
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	s.renderLogin(w, r, http.StatusUnauthorized, loginView{Next: "/cluster"}, why)
}

// authorize checks that the request's identity may do action; a refusal
// is answered 403, audited, and false returned.
func (s *Server) authorize(r *http.Request, action Action, target string) error {
	id := identityOf(r)
	if id.Can(string(action)) {
		return nil
	}
	need := roleTable[action]
	err := fmt.Errorf("%w: %s (%s) may not %s: it takes the %s role", ErrForbidden, id.User, id.Role, action, need)
	s.audit(r, action, target, err)
	return err
}
