package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
)

//go:embed web
var webFS embed.FS

// pages are the parsed templates, one set per page.
type pages struct{ t map[string]*template.Template }

var pageNames = []string{"cluster", "topics", "topic", "groups", "group", "messages", "message", "dlq", "half", "order", "orders", "error",
	"login", "audit", "controller"}

var funcs = template.FuncMap{
	"rate": func(r *float64) string {
		if r == nil {
			return "–"
		}
		return strconv.FormatFloat(*r, 'f', 1, 64)
	},
	"pct": func(r *float64) string {
		if r == nil {
			return "–"
		}
		return strconv.FormatFloat(*r*100, 'f', 1, 64) + "%"
	},
	"pctnum": func(r *float64) string {
		if r == nil {
			return "0"
		}
		return strconv.FormatFloat(*r*100, 'f', 0, 64)
	},
	"bytes": func(n int64) string {
		const unit = 1024
		if n < unit {
			return fmt.Sprintf("%d B", n)
		}
		div, exp := int64(unit), 0
		for m := n / unit; m >= unit; m /= unit {
			div *= unit
			exp++
		}
		return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
	},
	"path":  url.PathEscape,
	"query": url.QueryEscape,
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05")
	},
	"join": strings.Join,
	"short": func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return s[:n] + "…"
	},
	"cell": func(v any) string {
		switch x := v.(type) {
		case nil:
			return ""
		case string:
			return x
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		b, _ := json.Marshal(v)
		return string(b)
	},
}

func loadPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, n := range pageNames {
		t, err := template.New(n).Funcs(funcs).ParseFS(webFS, "web/templates/layout.html", "web/templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		p.t[n] = t
	}
	return p, nil
}

// view is what every page template gets.
type view struct {
	Title  string
	Nav    string
	Data   any
	Error  string
	Flash  string
	Status int
	API    string    // the page's JSON twin
	User   *Identity // nil on the sign-in page
}

// Can reports whether the viewing user may do action: pages show only
// the forms of actions the role permits (the server checks again).
func (v view) Can(action string) bool { return v.User.Can(action) }

// SignOut reports whether the page offers "Sign out" (password sessions;
// a proxy's users sign out at the proxy).
func (v view) SignOut() bool { return v.User != nil && v.User.Via == "password" }

// Handler returns the console's HTTP handler: pages, their JSON twins
// under /api/, static files, /healthz (the process serves), /readyz
// (a NameServer answers), /login and /logout. Every other path takes a
// signed-in user, and each action the role the role table names.
// Cross-origin POSTs are refused.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.admin.ClusterInfo(r.Context()); err != nil {
			http.Error(w, "NameServers unreachable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/cluster", http.StatusFound) })
	mux.HandleFunc("GET /login", s.handleLoginPage)
	mux.HandleFunc("POST /login", s.handleLogin)
	mux.HandleFunc("POST /logout", s.handleLogout)
	s.page(mux, "GET", "/audit", "audit", "Audit", func(r *http.Request) (any, string, error) {
		if err := s.authorize(r, ActReadAudit, "audit"); err != nil {
			return nil, "", err
		}
		recs := s.audits.newest()
		return &AuditView{Records: recs, Kept: auditKept}, "", nil
	})

	s.page(mux, "GET", "/cluster", "cluster", "Cluster", func(r *http.Request) (any, string, error) {
		v, err := s.cluster(r.Context())
		return v, "", err
	})
	s.page(mux, "GET", "/controller", "controller", "Controller", func(r *http.Request) (any, string, error) {
		v, err := s.controller(r.Context())
		return v, "", err
	})
	s.page(mux, "GET", "/topics", "topics", "Topics", func(r *http.Request) (any, string, error) {
		v, err := s.topics(r.Context(), r.FormValue("all") != "")
		return v, "", err
	})
	s.page(mux, "GET", "/topics/{topic}", "topic", "Topics", func(r *http.Request) (any, string, error) {
		v, err := s.topic(r.Context(), r.PathValue("topic"))
		return v, "", err
	})
	s.page(mux, "GET", "/groups", "groups", "Groups", func(r *http.Request) (any, string, error) {
		v, err := s.groups(r.Context(), r.FormValue("all") != "")
		return v, "", err
	})
	s.page(mux, "GET", "/groups/{group}", "group", "Groups", func(r *http.Request) (any, string, error) {
		v, err := s.group(r.Context(), r.PathValue("group"))
		return v, "", err
	})
	s.page(mux, "POST", "/groups/{group}/reset", "group", "Groups", s.handleReset)
	s.page(mux, "GET", "/messages", "messages", "Messages", s.handleSearch)
	s.page(mux, "GET", "/message", "message", "Messages", func(r *http.Request) (any, string, error) {
		v, err := s.message(r.Context(), r.FormValue("topic"), strings.TrimSpace(r.FormValue("id")))
		return v, "", err
	})
	s.page(mux, "GET", "/dlq", "dlq", "DLQ", func(r *http.Request) (any, string, error) {
		return s.dlqPage(r, nil)
	})
	s.page(mux, "POST", "/dlq/resend", "dlq", "DLQ", s.handleResend)
	s.page(mux, "GET", "/half", "half", "Half", func(r *http.Request) (any, string, error) {
		v, err := s.halfMessages(r.Context())
		return v, "", err
	})
	s.page(mux, "POST", "/half/action", "half", "Half", s.handleHalfAction)
	list := func(r *http.Request) (any, string, error) {
		v, err := s.orders(r.Context(), r.FormValue("status"), r.FormValue("user"), r.FormValue("page"))
		return v, "", err
	}
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		if id := strings.TrimSpace(r.FormValue("id")); id != "" {
			http.Redirect(w, r, "/orders/"+url.PathEscape(id), http.StatusFound)
			return
		}
		data, flash, err := list(r)
		s.render(w, r, "orders", "Orders", data, flash, err)
	})
	mux.HandleFunc("GET /api/orders", func(w http.ResponseWriter, r *http.Request) {
		data, _, err := list(r)
		s.writeJSON(w, r, data, err)
	})
	// The list's "id" box is checked like any page field.
	s.page(mux, "GET", "/orders/{id}", "order", "Orders", func(r *http.Request) (any, string, error) {
		v, err := s.order(r.Context(), r.PathValue("id"))
		return v, "", err
	})
	return http.NewCrossOriginProtection().Handler(s.authenticate(mux))
}

// pageFunc builds a page's data and an optional flash message.
type pageFunc func(r *http.Request) (any, string, error)

// page registers path as an HTML page and /api+path as its JSON twin.
// Every request's input is checked first (checkInput).
func (s *Server) page(mux *http.ServeMux, method, path, tmpl, nav string, fn pageFunc) {
	var pathFields []string
	for _, f := range []string{"topic", "group", "id"} {
		if strings.Contains(path, "{"+f+"}") {
			pathFields = append(pathFields, f)
		}
	}
	checked := func(w http.ResponseWriter, r *http.Request) (any, string, error) {
		if err := checkInput(w, r, pathFields...); err != nil {
			return nil, "", err
		}
		return fn(r)
	}
	mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		data, flash, err := checked(w, r)
		s.render(w, r, tmpl, nav, data, flash, err)
	})
	mux.HandleFunc(method+" /api"+path, func(w http.ResponseWriter, r *http.Request) {
		data, _, err := checked(w, r)
		s.writeJSON(w, r, data, err)
	})
}

// writeJSON answers a page's JSON twin: data, or {"error": ...} with the
// error's status.
func (s *Server) writeJSON(w http.ResponseWriter, r *http.Request, data any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		s.logError(r, err)
		w.WriteHeader(statusOf(err))
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(data)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests
	case errors.Is(err, errOnline):
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func (s *Server) logError(r *http.Request, err error) {
	s.log.Warn("console: request failed", "method", r.Method, "path", r.URL.Path, "status", statusOf(err), "err", err)
}

// render writes tmpl with data; with err and no data it renders the error
// page, with err and data (a refused action) the page and the error.
func (s *Server) render(w http.ResponseWriter, r *http.Request, tmpl, nav string, data any, flash string, err error) {
	v := view{Title: nav, Nav: nav, Data: data, Flash: flash, Status: http.StatusOK, User: identityOf(r)}
	if r.Method == http.MethodGet {
		v.API = "/api" + r.URL.RequestURI()
	}
	if err != nil {
		s.logError(r, err)
		v.Error, v.Status = err.Error(), statusOf(err)
		if isNil(data) {
			tmpl, v.Data = "error", nil
		}
	}
	var buf bytes.Buffer
	if terr := s.pages.t[tmpl].ExecuteTemplate(&buf, "layout", v); terr != nil {
		s.log.Error("console: render", "page", tmpl, "err", terr)
		http.Error(w, "render failed: "+terr.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(v.Status)
	w.Write(buf.Bytes())
}

// handleReset resets a group's offsets on a topic to a time. Every
// attempt past the role check is audited, failures too.
func (s *Server) handleReset(r *http.Request) (_ any, _ string, err error) {
	ctx, group := r.Context(), r.PathValue("group")
	target := "group " + group
	if err := s.authorize(r, ActResetOffset, target); err != nil {
		return nil, "", err
	}
	defer func() { s.audit(r, ActResetOffset, target, err) }()
	v, err := s.group(ctx, group)
	if err != nil {
		return nil, "", err
	}
	topic := strings.TrimSpace(r.FormValue("topic"))
	if topic == "" {
		return v, "", fmt.Errorf("%w: choose a topic", ErrBadRequest)
	}
	target += " topic " + topic
	at, err := parseTime(r.FormValue("time"))
	if err != nil {
		return v, "", err
	}
	target += " to " + at.UTC().Format(time.RFC3339)
	rows, err := s.resetOffset(ctx, group, topic, at, r.FormValue("allowOnline") != "")
	if err != nil {
		return v, "", err
	}
	failed := 0
	for _, row := range rows {
		if row.Error != "" {
			failed++
		}
	}
	if nv, err := s.group(ctx, group); err == nil {
		v = nv
	}
	v.Reset = rows
	return v, fmt.Sprintf("Offsets of %s on %s reset to %s by %s: %d queue(s), %d failed.", group, topic,
		at.Local().Format(time.DateTime), identityOf(r).User, len(rows), failed), nil
}

func (s *Server) handleSearch(r *http.Request) (any, string, error) {
	ctx := r.Context()
	q := SearchQuery{Topic: strings.TrimSpace(r.FormValue("topic")), Key: strings.TrimSpace(r.FormValue("key")),
		ID: strings.TrimSpace(r.FormValue("id")), Begin: strings.TrimSpace(r.FormValue("begin")), End: strings.TrimSpace(r.FormValue("end"))}
	q.Max, _ = strconv.Atoi(r.FormValue("max"))
	if q.Max <= 0 {
		q.Max = 64
	}
	v := &SearchView{Query: q, Messages: []MessageView{}}
	v.Topics, _ = s.admin.Topics(ctx)
	if q.Key == "" && q.ID == "" && q.Begin == "" {
		return v, "", nil
	}
	v.Searched = true
	ms, err := s.search(ctx, q)
	if err != nil {
		return v, "", err
	}
	v.Messages = ms
	return v, "", nil
}

func (s *Server) dlqPage(r *http.Request, results []ResendResult) (*DLQView, string, error) {
	ctx := r.Context()
	v := &DLQView{Group: strings.TrimSpace(r.FormValue("group")), Groups: s.dlqGroups(ctx), Letters: []DeadLetter{}, Results: results}
	if v.Group == "" {
		return v, "", nil
	}
	if o := r.FormValue("offset"); o != "" {
		off, err := strconv.ParseInt(o, 10, 64)
		if err != nil || off < 0 {
			return v, "", fmt.Errorf("%w: bad offset %q", ErrBadRequest, o)
		}
		v.Offset = off
	}
	ls, err := s.deadLetters(ctx, v.Group, v.Offset, 100)
	if err != nil {
		return v, "", err
	}
	v.Letters = ls
	return v, "", nil
}

func (s *Server) handleResend(r *http.Request) (any, string, error) {
	if err := r.ParseForm(); err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	group := strings.TrimSpace(r.FormValue("group"))
	if err := s.authorize(r, ActResendDLQ, "group "+group); err != nil {
		return nil, "", err
	}
	op := identityOf(r).User
	ids := r.Form["id"]
	if group == "" || len(ids) == 0 {
		v, _, _ := s.dlqPage(r, nil)
		err := fmt.Errorf("%w: choose a group and at least one dead letter", ErrBadRequest)
		s.audit(r, ActResendDLQ, "group "+group, err)
		return v, "", err
	}
	if len(ids) > 1000 {
		err := fmt.Errorf("%w: at most 1000 dead letters per resend", ErrBadRequest)
		s.audit(r, ActResendDLQ, "group "+group, err)
		return nil, "", err
	}
	res := s.resend(r, group, ids, r.FormValue("target") == "origin")
	ok := 0
	for _, x := range res {
		if x.OK {
			ok++
		}
	}
	v, _, err := s.dlqPage(r, res)
	return v, fmt.Sprintf("Resent %d of %d dead letter(s) of %s (by %s).", ok, len(res), group, op), err
}

func (s *Server) handleHalfAction(r *http.Request) (any, string, error) {
	ctx := r.Context()
	act, known := halfActionOf(r.FormValue("action"))
	target := fmt.Sprintf("half message at queue offset %s on %s", r.FormValue("offset"), r.FormValue("broker"))
	if !known {
		act = ActHalfCommit // the strictest half action: an unknown one is refused or answered 400
	}
	if err := s.authorize(r, act, target); err != nil {
		return nil, "", err
	}
	var msg string
	off, err := strconv.ParseInt(r.FormValue("offset"), 10, 64)
	if err != nil || off < 0 {
		err = fmt.Errorf("%w: bad queue offset %q", ErrBadRequest, r.FormValue("offset"))
	} else {
		msg, err = s.halfAction(r, r.FormValue("broker"), r.FormValue("action"), off)
	}
	s.audit(r, act, target, err)
	v, lerr := s.halfMessages(ctx)
	if lerr != nil && err == nil {
		err = lerr
	}
	if v != nil {
		v.Result = msg
	}
	return v, msg, err
}

// isNil reports a nil interface or a nil pointer in one.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
