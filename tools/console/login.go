package console

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"unicode/utf8"
)

// loginView is the sign-in page. It never carries the password back.
type loginView struct {
	User     string
	Next     string
	Proxy    bool // a proxy header is configured
	Password bool // a users file is configured
}

// safeNext keeps a post-sign-in redirect on this console: a local path,
// never "//host" or "/\host" (which browsers read as another site).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") ||
		len(next) > 2048 || !utf8.ValidString(next) || strings.ContainsAny(next, "\r\n") {
		return "/cluster"
	}
	return next
}

func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if id, _ := s.identify(r); id != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	flash, msg := "", ""
	if r.URL.Query().Get("out") != "" {
		flash = "Signed out."
	}
	if r.URL.Query().Get("ended") != "" {
		msg = "Your session has ended (idle or too old): sign in again."
	}
	s.renderLoginFlash(w, r, http.StatusOK, loginView{Next: next}, msg, flash)
}

// handleLogin checks a sign-in form (user, password, next): rate limited
// per user name and per client address, audited either way.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.renderLogin(w, r, http.StatusBadRequest, loginView{Next: "/cluster"}, "the form could not be read")
		return
	}
	name, password := strings.TrimSpace(r.PostFormValue("user")), r.PostFormValue("password")
	v := loginView{User: name, Next: safeNext(r.PostFormValue("next"))}
	if len(name) > 64 || !utf8.ValidString(name) {
		v.User = ""
		s.renderLogin(w, r, http.StatusBadRequest, v, "user: must be at most 64 bytes of UTF-8 text")
		return
	}
	if s.users == nil {
		s.renderLogin(w, r, http.StatusBadRequest, v, "this console signs users in through its proxy, not with passwords")
		return
	}
	if name == "" || password == "" || len(password) > 1024 {
		s.renderLogin(w, r, http.StatusBadRequest, v, "give a user name and a password")
		return
	}
	now := s.now()
	keys := []string{"user:" + name, "addr:" + clientIP(r.RemoteAddr)}
	if wait := s.limiter.wait(now, keys...); wait > 0 {
		mins := int(math.Ceil(wait.Minutes()))
		err := fmt.Errorf("%w: too many failed sign-ins for %s or from your address: try again in %d minute(s)", ErrRateLimited, name, mins)
		s.auditAs(r, name, RoleNone, ActSignIn, name, err)
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		s.renderLogin(w, r, http.StatusTooManyRequests, v, strings.TrimPrefix(err.Error(), ErrRateLimited.Error()+": "))
		return
	}
	u, ok, ferr := s.users.verify(name, password)
	if ferr != nil {
		s.log.Error("console: users file", "err", ferr)
	}
	if !ok {
		s.limiter.fail(now, keys...)
		s.auditAs(r, name, RoleNone, ActSignIn, name, errBadLogin)
		s.renderLogin(w, r, http.StatusUnauthorized, v, "wrong user name or password")
		return
	}
	s.limiter.reset(keys[0])
	http.SetCookie(w, s.sessionCookie(s.sessions.create(u), 0))
	s.auditAs(r, u.Name, u.Role, ActSignIn, u.Name, nil)
	http.Redirect(w, r, v.Next, http.StatusSeeOther)
}

var errBadLogin = errors.New("wrong user name or password")

// handleLogout ends the session (POST, so no link on another page can
// sign a user out) and clears the cookie.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(s.cookieName()); err == nil {
		if id, _ := s.identify(r); id != nil && id.Via == "password" {
			s.auditAs(r, id.User, id.Role, ActSignOut, id.User, nil)
		}
		s.sessions.delete(c.Value)
	}
	http.SetCookie(w, s.sessionCookie("", -1))
	http.Redirect(w, r, "/login?out=1", http.StatusSeeOther)
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, v loginView, errMsg string) {
	s.renderLoginFlash(w, r, status, v, errMsg, "")
}

func (s *Server) renderLoginFlash(w http.ResponseWriter, r *http.Request, status int, v loginView, errMsg, flash string) {
	v.Proxy, v.Password = s.opts.Auth.ProxyHeader != "", s.users != nil
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, "{%q: %q}\n", "error", errMsg)
		return
	}
	var buf bytes.Buffer
	pv := view{Title: "Sign in", Nav: "Sign in", Data: v, Error: errMsg, Flash: flash, Status: status}
	if err := s.pages.t["login"].ExecuteTemplate(&buf, "layout", pv); err != nil {
		s.log.Error("console: render", "page", "login", "err", err)
		http.Error(w, "render failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

func clientIP(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}
